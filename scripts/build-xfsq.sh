#!/usr/bin/env bash
# build-xfsq.sh — build the xfsq binary as it is shipped:
#
#   scripts/build-xfsq.sh [OUT]     default: xfsq at the top of the repository
#
# CGO_ENABLED=0: one static binary, no libc (without it, net and os/user
# link libc whenever a C compiler is present). -tags urfave_cli_no_docs:
# xfsq generates no man pages, and urfave/cli's generator (blackfriday)
# costs every command ~0.6 ms at start (10 % of `xfsq --help`).
# -buildvcs=auto: `xfsq --version` names the commit when built in a checkout.
set -euo pipefail
out=$(realpath -m -- "${1:-$(dirname "$0")/../xfsq}") # OUT is relative to where you are
cd "$(dirname "$0")/.."
CGO_ENABLED=0 go build -buildvcs=auto -tags urfave_cli_no_docs -o "$out" ./cmd/xfsq
