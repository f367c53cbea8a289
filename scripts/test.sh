#!/usr/bin/env bash
# test.sh — the project's test command (README.md; .ci/run calls it):
#
#   scripts/test.sh [go test flags…]     e.g. scripts/test.sh -run TestKernel
#
# As root it installs the missing Debian packages (scripts/deps.sh test) and
# starts and prepares a PostgreSQL for the store tests; then it runs
# go test ./... over every package, showing each package as it starts and
# naming those still running every half minute (go test -json, summarised by
# scripts/testsummary; go test's own ok/FAIL lines pass through unchanged).
# Kernel tests boot a VM where the host kernel cannot enforce XFS quotas;
# each such package's route is printed at the end — a route that cannot run
# on this CPU is named as such, its console lines kept in a file — and so
# is what was skipped and how to run it.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"

scripts/deps.sh test || echo "test.sh: going on without them: the tests that need them skip (or fail under CI=true)" >&2

# PostgreSQL: the store tests run on it as well as on SQLite.
if [ -z "${XFSQ_TEST_POSTGRES:-}" ] && [ "$(id -u)" = 0 ] && command -v pg_lsclusters >/dev/null; then
	cluster=$(pg_lsclusters --no-header | awk 'NR==1 {print $1" "$2}')
	if [ -n "$cluster" ]; then
		pg_ctlcluster $cluster start 2>/dev/null || pg_ctlcluster $cluster status >/dev/null
		su postgres -c "psql -qtAc \"SELECT 1 FROM pg_roles WHERE rolname='xfsq'\" | grep -q 1 || psql -qc \"CREATE ROLE xfsq LOGIN PASSWORD 'xfsq'\""
		su postgres -c "psql -qtAc \"SELECT 1 FROM pg_database WHERE datname='xfsq_test'\" | grep -q 1 || createdb -O xfsq xfsq_test"
		port=$(pg_lsclusters --no-header | awk 'NR==1 {print $3}')
		export XFSQ_TEST_POSTGRES="postgres://xfsq:xfsq@127.0.0.1:${port}/xfsq_test?sslmode=disable"
	fi
fi

report=$(mktemp)
log=$(mktemp)
skipped=$(mktemp)
summary=$(mktemp)
# The console lines of kernel-test routes that could not run here: kept
# after the run (named in the route lines) unless there are none.
detail=$(mktemp -t xfsq-kernel-routes.XXXXXX)
trap 'rm -f "$report" "$log" "$skipped" "$summary"; [ -s "$detail" ] || rm -f "$detail"' EXIT
export XFSQ_KERNELTEST_REPORT=$report XFSQ_TEST_SKIP_REPORT=$skipped XFSQ_KERNELTEST_DETAIL=$detail

go version
all=
for a in "$@"; do case $a in -v | -test.v | -v=true) all=-all ;; esac; done
set +e
# Kernel tests under software emulation take minutes: more than go test's
# default 10-minute limit per package leaves room for a busy machine.
if CGO_ENABLED=0 go build -o "$summary" ./scripts/testsummary; then
	go test -json -timeout 30m "$@" ./... 2>&1 | "$summary" $all | tee "$log"
else
	echo "test.sh: scripts/testsummary does not build: plain go test output follows" >&2
	go test -timeout 30m "$@" ./... 2>&1 | tee "$log"
fi
rc=${PIPESTATUS[0]}
# go vet and staticcheck stay clean (issue 34): staticcheck comes from the
# Go module proxy at a pinned version, so CI needs nothing installed for it.
lint=clean
go vet ./... || lint="go vet failed"
# The other architecture the walker has direct syscalls for: its build (and
# its tests' types) must not rot where nobody runs it.
GOARCH=arm64 go vet ./... || lint="go vet for arm64 failed"
go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./... || lint="staticcheck failed"
[ "$lint" = clean ] || [ "$rc" != 0 ] || rc=1
set -e

echo
sort -u "$report"
[ -s "$report" ] || echo "kernel tests: no route line was written (did the kernel tests run? see their output above)"
if [ -s "$skipped" ]; then
	echo "store tests skipped without PostgreSQL: $(wc -l <"$skipped") in $(cut -d' ' -f1 "$skipped" | sort -u | tr '\n' ' ')(e.g. $(head -1 "$skipped" | cut -d' ' -f2)); they ran on SQLite only"
	echo "  run them: set XFSQ_TEST_POSTGRES=postgres://USER:PASS@127.0.0.1/DB?sslmode=disable, or run this script as root to start one"
elif [ -z "${XFSQ_TEST_POSTGRES:-}" ]; then
	echo "store tests: XFSQ_TEST_POSTGRES is unset, so any that ran skipped their PostgreSQL variants (none was recorded: cached results?)"
fi
# One plain closing line for whoever reads only the last one.
echo "packages: $(grep -c '^ok ' "$log") passed, $(grep -c '^FAIL[[:space:]]' "$log") failed; vet and staticcheck: $lint"
exit "$rc"
