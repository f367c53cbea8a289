# kernel-route.sh — sourced by the scripts that run benchmarks against real
# project quotas (kernel-bench.sh, metrics-bench.sh).
#
# run_in_kernel SCRIPT RESULT runs SCRIPT natively where the host kernel
# enforces XFS quotas and this is root, else inside the test kernel
# (internal/testsupport/kerneltest/vmrun, built beside SCRIPT: 2G of guest memory, a
# 3G scratch disk, 60 minutes at most); it prints the route and SCRIPT's
# output, and keeps the output in RESULT. Run from the module's root.
run_in_kernel() {
	if [ -e /proc/fs/xfs/xqm ] && [ "$(id -u)" = 0 ]; then
		echo "route: native"
		"$1" | tee "$2"
	else
		CGO_ENABLED=0 go build -o "$(dirname "$1")/vmrun" ./internal/testsupport/kerneltest/vmrun
		"$(dirname "$1")/vmrun" -mem 2G -disk 3G -timeout 60m "$1" | tee "$2"
	fi
}
