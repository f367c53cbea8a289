#!/usr/bin/env bash
# fleet-bench.sh — the fleet benchmark of issue 36 (docs/benchmarks.md#fleet): HOSTS hosts x
# PROJECTS projects on one PostgreSQL, measured twice, with PostgreSQL on loopback and then 1 ms
# away (netem on a veth pair of the script's own):
#
#   scripts/fleet-bench.sh                            10 hosts x 1,000 projects, -benchtime 3x
#   HOSTS=2 PROJECTS=50 BENCHTIME=2x scripts/fleet-bench.sh     a quick check of the script
#   ONLY=netem scripts/fleet-bench.sh                 one of the two runs (loopback or netem)
#   DELAY=300us scripts/fleet-bench.sh                delayproxy's hold each way (default 500us)
#   BENCH='Fleet/(report|add)$' scripts/fleet-bench.sh  only those parts (-test.bench; default all)
#
# What it measures is sandbox's BenchmarkFleet (each host a fallback root with its own store
# pool, in one process): report of one host, its overview, the fleet's storage (every host's
# trees), a project add, `snapshot --all` of one host's 3,000 empty trees, and the scheduled
# snapshot pass of every host at once: its wall time, its statements, the database's time
# (pg_stat_statements, db-ms/op) and the p99 of the hosts' commits as they saw them.
#
# PostgreSQL is a throwaway cluster of the script's own (pg_createcluster 15, port PORT,
# pg_stat_statements preloaded), listening on 127.0.0.1 and on the root side of the veth; its
# pg_hba admits the veth's /30 only for its own role and database. The netem run's benchmark
# runs inside the namespace, whose only route to PostgreSQL is the veth, with
# `tc qdisc add dev <its veth end> root netem delay 1ms` (never on lo or a real interface).
# Where the kernel has no netem (CONFIG_NET_SCH_NETEM unset: this machine's), the delay is
# scripts/delayproxy inside the namespace instead: it listens on the namespace's loopback,
# dials PostgreSQL across the veth and holds every chunk 0.5 ms each way (1 ms a round trip),
# and says at its end how late its timers were. The output says which one was used.
# Everything (namespace, veth, cluster, proxy) is removed on exit, by trap.
#
# Needs: root, iproute2 (ip, tc), postgresql-15 and postgresql-common (pg_createcluster), Go.
# Never run in CI: a full run takes tens of minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
hosts=${HOSTS:-10}
projects=${PROJECTS:-1000}
benchtime=${BENCHTIME:-3x}
count=${COUNT:-1}
only=${ONLY:-}
bench=${BENCH:-^BenchmarkFleet\$}
port=${PORT:-5439}
delay=${DELAY:-500us}
pgver=${PGVER:-15}
cluster=xfsqfleetbench
tag=$$
ns=xfsqfb-$tag
veth=xqfb${tag}h  # the root namespace's end (PostgreSQL listens there)
peer=xqfb${tag}n  # the namespace's end (netem on it)
subnet=10.215.0.0/30
pgip=10.215.0.1
nsip=10.215.0.2

[ "$(id -u)" = 0 ] || { echo "fleet-bench: run it as root (network namespaces, a cluster of its own)" >&2; exit 1; }
for tool in ip tc pg_createcluster pg_dropcluster go; do
	command -v "$tool" >/dev/null || { echo "fleet-bench: $tool is missing (iproute2, postgresql-common, Go)" >&2; exit 1; }
done
[ -f "/usr/share/postgresql/$pgver/extension/pg_stat_statements.control" ] ||
	{ echo "fleet-bench: pg_stat_statements of PostgreSQL $pgver is missing" >&2; exit 1; }
if pg_lsclusters -h | awk '{print $2}' | grep -qx "$cluster"; then
	echo "fleet-bench: a cluster $pgver/$cluster exists already (another run's?): remove it with pg_dropcluster --stop $pgver $cluster" >&2
	exit 1
fi
work=$(mktemp -d)
made_cluster=
proxy=
cleanup() {
	set +e
	[ -n "$proxy" ] && kill "$proxy" 2>/dev/null && wait "$proxy"
	[ -n "$made_cluster" ] && pg_dropcluster --stop "$pgver" "$cluster"
	ip netns del "$ns" 2>/dev/null     # takes the namespace's end of the veth, and so the pair
	ip link del "$veth" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The namespace and the veth first: PostgreSQL listens on the veth's address.
ip netns add "$ns"
ip link add "$veth" type veth peer name "$peer"
ip link set "$peer" netns "$ns"
ip addr add "$pgip/30" dev "$veth"
ip link set "$veth" up
ip -n "$ns" addr add "$nsip/30" dev "$peer"
ip -n "$ns" link set "$peer" up
ip -n "$ns" link set lo up

made_cluster=1
pg_createcluster "$pgver" "$cluster" -p "$port" \
	-o "listen_addresses=127.0.0.1,$pgip" -o "shared_preload_libraries=pg_stat_statements" \
	-o "max_connections=200" -o "track_io_timing=on" >/dev/null
echo "host xfsqbench xfsqbench $subnet scram-sha-256" >>"/etc/postgresql/$pgver/$cluster/pg_hba.conf"
pg_ctlcluster "$pgver" "$cluster" start
psql_admin() { runuser -u postgres -- psql -X -q -v ON_ERROR_STOP=1 -p "$port" "$@"; }
psql_admin -c "CREATE ROLE xfsqbench LOGIN PASSWORD 'xfsqbench'" -c "CREATE DATABASE xfsqbench OWNER xfsqbench"
psql_admin -d xfsqbench -c "CREATE EXTENSION pg_stat_statements"

echo "building the benchmark"
go test -c -o "$work/sandbox.test" ./sandbox
CGO_ENABLED=0 go build -o "$work/delayproxy" ./scripts/delayproxy

run() { # run NAME HOST [PREFIX...]: the benchmark against PostgreSQL at HOST
	local name=$1 addr=$2
	shift 2
	echo
	echo "== $name: $hosts hosts x $projects projects, -benchtime $benchtime -count $count"
	echo "load before: $(uptime)"
	(cd sandbox && "$@" env XFSQ_TEST_POSTGRES="postgres://xfsqbench:xfsqbench@$addr:$port/xfsqbench?sslmode=disable" \
		XFSQ_BENCH_HOSTS="$hosts" XFSQ_BENCH_PROJECTS="$projects" \
		"$work/sandbox.test" -test.run '^$' -test.bench "$bench" -test.benchtime "$benchtime" \
		-test.count "$count" -test.timeout 4h -test.v) | grep -E '^(Benchmark|\s+fleet_bench)|set up in|FAIL|ok|PASS'
	echo "load after: $(uptime)"
}

rtt() { # rtt ADDR [PREFIX...]: the median of 20 `SELECT 1` round trips, as psql times them
	local addr=$1
	shift
	printf '\\timing on\n%s' "$(printf 'SELECT 1;\n%.0s' $(seq 20))" |
		"$@" env PGPASSWORD=xfsqbench psql -X -q -h "$addr" -p "$port" -U xfsqbench xfsqbench 2>&1 |
		awk '/^Time:/ {print $2}' | sort -n | awk '{a[NR]=$1} END {print "SELECT 1 round trip, median of " NR ": " a[int((NR+1)/2)] " ms"}'
}

if [ "$only" != netem ]; then
	rtt 127.0.0.1
	run "PostgreSQL on loopback" 127.0.0.1
fi
if [ "$only" != loopback ]; then
	echo
	if ip netns exec "$ns" tc qdisc add dev "$peer" root netem delay 1ms 2>/dev/null; then
		echo "the namespace's round trip to PostgreSQL (netem delay 1ms on $peer):"
		ip netns exec "$ns" ping -c 5 -q "$pgip" | tail -1
		rtt "$pgip" ip netns exec "$ns"
		run "PostgreSQL 1 ms away (veth, netem)" "$pgip" ip netns exec "$ns"
	else
		echo "this kernel has no netem (tc: qdisc netem unknown): the 1 ms is scripts/delayproxy in $ns," \
			"$delay each way, in front of PostgreSQL across the veth"
		ip netns exec "$ns" "$work/delayproxy" -listen "127.0.0.1:$port" -to "$pgip:$port" -delay "$delay" &
		proxy=$!
		sleep 1
		rtt 127.0.0.1 ip netns exec "$ns"
		run "PostgreSQL 1 ms away (veth, delayproxy $delay each way)" 127.0.0.1 ip netns exec "$ns"
		kill "$proxy" && wait "$proxy" || true
		proxy=
	fi
fi
