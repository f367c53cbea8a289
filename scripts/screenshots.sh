#!/usr/bin/env bash
# screenshots.sh — remake the README's pictures from a real xfsq:
#
#   scripts/screenshots.sh [OUTDIR]      default: docs/screenshots
#
# It builds xfsq, makes a small sandbox root (fallback backend, in a
# temporary directory: no root, no XFS needed) with three projects — one
# near its limit, one past it, one small — starts `xfsq serve` on it, and
# takes docs/screenshots/dashboard.png of the dashboard in headless Chromium
# (and one of each of its other views, the fleet's hosts and another host's
# trees among them: a second root on the same store, as a fleet's host)
# and docs/screenshots/report.png of `xfsq report` as a terminal shows it
# (run under script(1), so it has a terminal and its colours).
# Needs chromium (apt-get install chromium; scripts/deps.sh test has it).
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(realpath -m -- "${1:-docs/screenshots}")
mkdir -p "$out"
command -v chromium >/dev/null || { echo "screenshots.sh: chromium not found: apt-get install chromium" >&2; exit 1; }

work=$(mktemp -d)
serve_pid=
cleanup() {
	if [ -n "$serve_pid" ]; then kill "$serve_pid" 2>/dev/null || true; wait "$serve_pid" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT

echo "building xfsq"
CGO_ENABLED=0 go build -o "$work/xfsq" ./cmd/xfsq
root=$work/root
mkdir "$root"
x() { "$work/xfsq" --root "$root" "$@"; }
fill() { dd if=/dev/urandom of="$1" bs=1M count="$2" status=none; } # real blocks, not sparse

echo "making a root with three projects"
x init --backend fallback >/dev/null
x project add omni --bytes-hard 40MiB --bytes-soft 30MiB >/dev/null
x project add atlas --bytes-hard 32MiB >/dev/null
x project add kestrel --bytes-hard 100MiB >/dev/null
mkdir -p "$root/projects/omni/build" "$root/projects/omni/data" "$root/projects/atlas/dist" "$root/cache/omni/go-mod"
fill "$root/projects/omni/data/corpus.bin" 22
fill "$root/projects/omni/build/app.tar" 12
fill "$root/projects/atlas/dist/bundle.js" 34
fill "$root/projects/kestrel/notes.db" 6
fill "$root/cache/omni/go-mod/cache.zip" 9
x snapshot --all >/dev/null
sleep 1
fill "$root/projects/omni/data/more.bin" 3
x snapshot --all >/dev/null # a second pass: the charts have two points and now
x lease acquire kestrel run-7 --ttl 2h >/dev/null
# A second host on the same store that never reported: the hosts page
# lists it stale, and the header's host selector offers it.
root2=$work/root2
mkdir "$root2"
"$work/xfsq" --root "$root2" --db "$root/.xfsq/xfsq.db" --host builder-02 init --backend fallback >/dev/null
"$work/xfsq" --root "$root2" --db "$root/.xfsq/xfsq.db" --host builder-02 project add vega --bytes-hard 64MiB >/dev/null

printf '%s,%s,%s\n' screenshots-token-0123456789 screenshots reader >"$work/tokens.csv"
chmod 600 "$work/tokens.csv"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
# Not through x: $! must be serve's own pid for the cleanup to stop it.
"$work/xfsq" --root "$root" serve --listen "127.0.0.1:$port" --token-file "$work/tokens.csv" 2>"$work/serve.log" &
serve_pid=$!
for _ in $(seq 50); do
	curl -fs "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break
	sleep 0.2
done
curl -fs "http://127.0.0.1:$port/readyz" >/dev/null || { cat "$work/serve.log" >&2; exit 1; }

echo "capturing xfsq report on a terminal"
{
	printf '$ xfsq report\n'
	COLUMNS=160 TERM=xterm-256color script -qec "$work/xfsq --root $root report" /dev/null
} >"$work/report.ansi"

echo "taking the screenshots in Chromium"
go run ./scripts/screenshots -url "http://127.0.0.1:$port" -token screenshots-token-0123456789 \
	-report "$work/report.ansi" -out "$out"
