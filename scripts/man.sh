#!/usr/bin/env bash
# man.sh — generate the man page xfsq(1) from the command tree itself:
#
#   scripts/man.sh [OUT]     default: xfsq.1 at the top of the repository
#
# It runs xfsq built without urfave_cli_no_docs (the shipped binary leaves
# the generator out, see build-xfsq.sh) and its hidden `man` command, so
# the page lists exactly the commands and flags `xfsq --help` does.
# Install: install -Dm644 xfsq.1 /usr/local/share/man/man1/xfsq.1
set -euo pipefail
out=$(realpath -m -- "${1:-$(dirname "$0")/../xfsq.1}")
cd "$(dirname "$0")/.."
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
CGO_ENABLED=0 go run ./cmd/xfsq man >"$tmp"
mv "$tmp" "$out"
echo "wrote $out"
