#!/usr/bin/env bash
# serve-bench.sh — the HTTP benchmarks of `xfsq serve` (issue 18), measured
# with wrk on loopback beside their reference, in the same run:
#
#   scripts/serve-bench.sh [SECONDS]    each measurement runs SECONDS (default 20)
#   SOAK=600 scripts/serve-bench.sh     also: RSS after SOAK seconds of load, serve's own
#                                       passes running every minute (default 0: skipped)
#
# The root is a fallback root (this machine's filesystem has no XFS quotas)
# with 1,000 projects, each with a few files and a snapshot. The reference
# is scripts/benchceiling: the cheapest net/http server, a fixed 200-byte
# JSON. Goals (docs/benchmarks.md):
#   admission    >= 0.5x the reference's requests/s, p99 <= 5 ms, 32 connections
#                (the p99 with wrk on a core of its own, taskset, the servers on the other)
#   overview     >= 2,000 requests/s, p99 <= 20 ms; If-None-Match answers 304
#   admission while a snapshot pass and a sweep run: p99 <= 20 ms
#   serve RSS <= 64 MiB after SOAK seconds of that load
# Needs: wrk (apt-get install wrk), curl, taskset (util-linux). Exit 1 when a goal is missed.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-20}
soak=${SOAK:-0}
conns=32
for tool in wrk curl; do
	command -v "$tool" >/dev/null || { echo "serve-bench: $tool is missing: apt-get install $tool" >&2; exit 1; }
done
work=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

scripts/build-xfsq.sh "$work/xfsq" >/dev/null
CGO_ENABLED=0 go build -o "$work/ceiling" ./scripts/benchceiling
x() { "$work/xfsq" --root "$work/root" "$@"; }

mkdir "$work/root"
x init >/dev/null
echo "setting up 1,000 projects with files and snapshots ..." >&2
seq -f 'p%04.0f' 0 999 | xargs -P 2 -I{} "$work/xfsq" --root "$work/root" project add {} --bytes-hard 1GiB >/dev/null
for d in "$work"/root/projects/p*; do
	mkdir -p "$d/uploads/run"
	head -c 40000 /dev/zero >"$d/uploads/run/a.bin"
	head -c 9000 /dev/zero >"$d/uploads/b.txt"
	: >"$d/inbox/empty"
done
x snapshot --all >/dev/null

token=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
printf '%s,bench,operator\n' "$token" >"$work/tokens.csv"
chmod 600 "$work/tokens.csv"
port=$((20000 + RANDOM % 20000))
# Not through x(): $! must be serve's own PID, for its RSS below.
"$work/xfsq" --root "$work/root" serve --listen "127.0.0.1:$port" --token-file "$work/tokens.csv" 2>"$work/serve.log" &
pids+=($!)
serve_pid=$!
"$work/ceiling" -listen "127.0.0.1:$((port + 1))" &
pids+=($!)
ceiling_pid=$!
wrk_bin=$(command -v wrk)
for _ in $(seq 100); do
	curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && curl -sf "http://127.0.0.1:$((port + 1))/" >/dev/null && break
	sleep 0.1
done
# serve's first scheduled snapshot pass walks every tree at start: the
# steady-state measurements wait for it (the busy one below runs beside
# passes on purpose).
for _ in $(seq 1200); do
	grep -q 'pass done' "$work/serve.log" && break
	sleep 0.5
done
grep -q 'pass done' "$work/serve.log" || { echo "serve-bench: serve's first snapshot pass did not end within 10 minutes" >&2; exit 1; }
base=http://127.0.0.1:$port
auth="Authorization: Bearer $token"

cat >"$work/admission.lua" <<'LUA'
local i = 0
request = function()
	i = (i + 1) % 1000
	return wrk.format("GET", string.format("/v1/workspace/storage/projects/p%04d/admission", i))
end
LUA

# run NAME URL [wrk args…]: prints "NAME rps p99_ms" from wrk's latency table.
run() {
	local name=$1 url=$2
	shift 2
	wrk -t 2 -c "$conns" -d "${secs}s" --latency "$@" "$url" >"$work/$name.out"
	awk -v n="$name" '
		/Requests\/sec:/ { rps = $2 }
		/^ +99%/ { v = $2; if (v ~ /us$/) { sub(/us/, "", v); v /= 1000 } else if (v ~ /ms$/) { sub(/ms/, "", v) } else if (v ~ /s$/) { sub(/s/, "", v); v *= 1000 }; p99 = v }
		/Non-2xx/ { bad = $NF }
		END { printf "%s %.0f %.2f %s\n", n, rps, p99, (bad == "" ? 0 : bad) }' "$work/$name.out"
}

results=$work/results
{
	run ceiling "http://127.0.0.1:$((port + 1))/"
	# The reference again, driven by the admission run's Lua request
	# script (it ignores the path): how much of the gap is wrk's own
	# request building on the same two cores. The goal stays the plain one.
	run ceiling_lua "http://127.0.0.1:$((port + 1))/" -s "$work/admission.lua"
	run admission "$base/" -H "$auth" -s "$work/admission.lua"
	run overview "$base/v1/workspace/storage" -H "$auth"
	# The reference and admission again with the load generator off the
	# servers' core: wrk on CPU 1, both servers on CPU 0. Sharing two
	# cores, wrk and the server each wait out the other's scheduler slice,
	# which puts the reference's own p99 at 8-12 ms; no handler can answer
	# under that, so the 5 ms p99 is judged here, the requests/s ratio on
	# the shared cores above.
	if [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null; then
		taskset -acp 0 "$serve_pid" >/dev/null
		taskset -acp 0 "$ceiling_pid" >/dev/null
		wrk() { taskset -c 1 "$wrk_bin" "$@"; }
		run ceiling_pinned "http://127.0.0.1:$((port + 1))/"
		run admission_pinned "$base/" -H "$auth" -s "$work/admission.lua"
		unset -f wrk
		taskset -acp "0-$(($(nproc) - 1))" "$serve_pid" >/dev/null
		taskset -acp "0-$(($(nproc) - 1))" "$ceiling_pid" >/dev/null
	fi
} >"$results"

etag=$(curl -sfD - -o /dev/null -H "$auth" "$base/v1/workspace/storage" | tr -d '\r' | awk -F': ' 'tolower($1) == "etag" { print $2 }')
not_modified=$(curl -s -o /dev/null -w '%{http_code}' -H "$auth" -H "If-None-Match: $etag" "$base/v1/workspace/storage")

# Admission while a snapshot pass and a sweep run beside it (the CLI's
# passes, at their background priority, on the same root and store).
(while :; do x snapshot --all >/dev/null 2>&1; done) &
pids+=($!)
(while :; do x sweep --all >/dev/null 2>&1; done) &
pids+=($!)
run admission_busy "$base/" -H "$auth" -s "$work/admission.lua" >>"$results"
kill "${pids[@]:2}" 2>/dev/null || true

rss_kib=""
if [ "$soak" -gt 0 ]; then
	# The soak runs with serve's own scheduled passes, a snapshot and a
	# sweep of every project each minute (the shortest interval), as a
	# host's would run hourly: its RSS and p99 are of a serve doing all
	# its work, in its own process.
	x settings set snapshot_interval 1m >/dev/null
	x settings set sweep_interval 1m >/dev/null
	passes_before=$(grep -c 'pass done' "$work/serve.log" || true)
	secs=$soak run soak "$base/" -H "$auth" -s "$work/admission.lua" >>"$results"
	rss_kib=$(awk '/^VmRSS/ { print $2 }' "/proc/$serve_pid/status")
	hwm_kib=$(awk '/^VmHWM/ { print $2 }' "/proc/$serve_pid/status")
	soak_passes=$(($(grep -c 'pass done' "$work/serve.log" || true) - passes_before))
fi

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "each run: wrk -t 2 -c $conns -d ${secs}s on loopback; a fallback root of 1,000 projects with snapshots"
printf '%-16s %12s %10s %8s\n' measurement requests/s p99_ms non-2xx
awk '{ printf "%-16s %12s %10s %8s\n", $1, $2, $3, $4 }' "$results"
ceil=$(awk '$1 == "ceiling" { print $2 }' "$results")
fail=0
check() { # check LABEL EXPR
	if awk "BEGIN { exit !($2) }"; then echo "goal met:    $1"; else echo "goal MISSED: $1"; fail=1; fi
}
get() { awk -v n="$1" -v f="$2" '$1 == n { print $f }' "$results"; }
echo "admission / reference: $(awk -v a="$(get admission 2)" -v c="$ceil" 'BEGIN { printf "%.2f", a / c }')x"
echo "admission / reference with the same Lua client: $(awk -v a="$(get admission 2)" -v c="$(get ceiling_lua 2)" 'BEGIN { printf "%.2f", a / c }')x (not the goal)"
check "admission >= 0.5x reference ($(get admission 2) vs $ceil req/s)" "$(get admission 2) >= 0.5 * $ceil"
if [ -n "$(get admission_pinned 3)" ]; then
	echo "admission / reference, wrk on its own core: $(awk -v a="$(get admission_pinned 2)" -v c="$(get ceiling_pinned 2)" 'BEGIN { printf "%.2f", a / c }')x (not the goal)"
	check "admission p99 <= 5 ms, wrk on its own core ($(get admission_pinned 3) ms; $(get admission 3) ms sharing them)" "$(get admission_pinned 3) <= 5"
else
	check "admission p99 <= 5 ms ($(get admission 3) ms; one core: wrk shares it)" "$(get admission 3) <= 5"
fi
check "overview >= 2000 req/s ($(get overview 2))" "$(get overview 2) >= 2000"
check "overview p99 <= 20 ms ($(get overview 3) ms)" "$(get overview 3) <= 20"
check "overview If-None-Match answers 304 (got $not_modified)" "\"$not_modified\" == \"304\""
check "admission p99 <= 20 ms beside a snapshot pass and a sweep ($(get admission_busy 3) ms)" "$(get admission_busy 3) <= 20"
check "no request failed" "$(awk '{ s += $4 } END { print s }' "$results") == 0"
if [ -n "$rss_kib" ]; then
	echo "serve's own passes during the soak: $soak_passes ($(grep 'pass done' "$work/serve.log" | tail -n "$soak_passes" | grep -o '"pass":"[a-z]*"' | sort | uniq -c | tr -s ' \n' ' '))"
	check "serve's own snapshot and sweep passes ran during the soak ($soak_passes)" "$soak_passes >= 2"
	check "admission p99 <= 20 ms beside serve's own passes, over the soak ($(get soak 3) ms)" "$(get soak 3) <= 20"
	echo "serve RSS after ${soak}s of load: $((rss_kib / 1024)) MiB (peak $((hwm_kib / 1024)) MiB)"
	check "serve RSS <= 64 MiB" "$rss_kib <= 65536"
fi
exit $fail
