// Package metrics is what xfsq exports to Prometheus (docs/operations.md#metrics-alerts-and-grafana): the names,
// their help and labels, so that the server's /metrics, the Grafana
// dashboard and the alert rules in contrib/ agree on one spelling, and the
// collector behind Handler that produces them.
//
// Labels are project and area (and kind, soft or hard, of a limit;
// collector, of xfsq_collector_success; version and goversion of
// xfsq_build_info): their values are bounded by the projects a root holds
// and by the build, never by paths, runs or users.
//
// Every scrape reads what the library already knows, through its reads:
// sandbox.Manager.Usage (on XFS one enumeration of the kernel's counters,
// on the fallback the last walk plus the ledger), sandbox.Manager.
// ReadJournal for the counters (only what the journal gained since the
// last scrape), and health.Checker.Collect for the host. Series are made
// afresh at each scrape, so a removed project's series are gone from the
// next one. It must never read the store, walk a tree or ask the kernel
// itself, never take the admission lock, never write, and never add a
// label whose values a tenant controls.
package metrics

// A metric's name, type, help and labels.
type Metric struct {
	Name, Type, Help string
	Labels           []string
}

// Label names.
const (
	LabelProject   = "project"
	LabelArea      = "area" // of a tree: workspace or cache; of a disk: root or an area's base directory
	LabelKind      = "kind" // soft or hard, of a limit
	LabelCollector = "collector"
	LabelVersion   = "version"
	LabelGoVersion = "goversion"
)

// Metric names.
const (
	TreeUsedBytes          = "xfsq_tree_used_bytes"
	TreeLimitBytes         = "xfsq_tree_limit_bytes"
	TreeUsedInodes         = "xfsq_tree_used_inodes"
	TreeLimitInodes        = "xfsq_tree_limit_inodes"
	TreeUsageAgeSeconds    = "xfsq_tree_usage_age_seconds"
	QuotaExceeded          = "xfsq_quota_exceeded"
	TreeFullInSeconds      = "xfsq_tree_full_in_seconds"
	SweepEvictedBytesTotal = "xfsq_sweep_evicted_bytes_total"
	DeletionsFailedTotal   = "xfsq_deletions_failed_total"
	SweepDurationSeconds   = "xfsq_sweep_duration_seconds"
	WalkDurationSeconds    = "xfsq_walk_duration_seconds"
	SnapshotLastPass       = "xfsq_snapshot_last_pass_timestamp_seconds"

	HostDiskTotalBytes        = "xfsq_host_disk_total_bytes"
	HostDiskFreeBytes         = "xfsq_host_disk_free_bytes"
	HostDiskAvailableBytes    = "xfsq_host_disk_available_bytes"
	HostDiskTotalInodes       = "xfsq_host_disk_total_inodes"
	HostDiskFreeInodes        = "xfsq_host_disk_free_inodes"
	HostDiskFreeWarnRatio     = "xfsq_host_disk_free_warn_ratio"
	HostDiskFreeCriticalRatio = "xfsq_host_disk_free_critical_ratio"
	HostLoad1                 = "xfsq_host_load1"
	HostLoad5                 = "xfsq_host_load5"
	HostLoad15                = "xfsq_host_load15"
	HostCPUCores              = "xfsq_host_cpu_cores"
	HostCPUBusyRatio          = "xfsq_host_cpu_busy_ratio"
	HostMemoryTotalBytes      = "xfsq_host_memory_total_bytes"
	HostMemoryAvailableBytes  = "xfsq_host_memory_available_bytes"
	HostSwapTotalBytes        = "xfsq_host_swap_total_bytes"
	HostSwapFreeBytes         = "xfsq_host_swap_free_bytes"
	HostQuotaEnforced         = "xfsq_host_quota_enforced"
	HostStoreLatencySeconds   = "xfsq_host_store_latency_seconds"

	DockerContainersRunning = "xfsq_docker_containers_running"
	DockerContainers        = "xfsq_docker_containers"
	DockerImages            = "xfsq_docker_images"
	DockerImagesBytes       = "xfsq_docker_images_bytes"
	DockerContainersBytes   = "xfsq_docker_containers_bytes"
	DockerBuildCacheBytes   = "xfsq_docker_build_cache_bytes"
	DockerVolumesBytes      = "xfsq_docker_volumes_bytes"

	CollectorSuccess = "xfsq_collector_success"
	BuildInfo        = "xfsq_build_info"

	typeGauge, typeCounter = "gauge", "counter"
	typeHistogram          = "histogram"
)

// Collectors are the values of xfsq_collector_success's label: trees and
// journal (the library's reads) and each part of the health answer.
var Collectors = []string{"trees", "journal", "disk", "cpu", "memory", "docker", "quota", "store"}

var (
	tree     = []string{LabelProject, LabelArea}
	limit    = []string{LabelProject, LabelArea, LabelKind}
	diskArea = []string{LabelArea}
)

// All lists every metric xfsq exports besides the Go and process collectors.
var All = []Metric{
	{TreeUsedBytes, typeGauge, "Bytes a tree holds: the kernel's count on XFS, the last walk plus xfsq's writes on the fallback.", tree},
	{TreeLimitBytes, typeGauge, "A tree's byte limit; 0 is none.", limit},
	{TreeUsedInodes, typeGauge, "Files and directories a tree holds.", tree},
	{TreeLimitInodes, typeGauge, "A tree's file count limit; 0 is none.", limit},
	{TreeUsageAgeSeconds, typeGauge, "How old a tree's usage figure is: 0 on XFS (the kernel's live count), on the fallback the time since the walk it starts from (absent when never walked).", tree},
	{QuotaExceeded, typeGauge, "1 while a tree is at or over a hard limit, or over a soft one past its grace.", tree},
	{TreeFullInSeconds, typeGauge, "How long until a tree reaches its hard byte limit at the trend of its snapshots (docs/operations.md#full-in); 0 when it has; absent when it is not filling or too little is known.", tree},
	{SweepEvictedBytesTotal, typeCounter, "Bytes sweeps deleted, from the journal's settled storage.evicted records.", tree},
	{DeletionsFailedTotal, typeCounter, "Deletions (sweep, purge or files rm) the journal records as failed.", tree},
	{SweepDurationSeconds, typeHistogram, "How long a sweep took (one sweep may cover many projects).", nil},
	{WalkDurationSeconds, typeHistogram, "How long a walk of a tree in a scheduled snapshot pass took.", tree},
	{SnapshotLastPass, typeGauge, "When the last scheduled snapshot pass ended, in Unix seconds (absent before the first).", nil},

	{HostDiskTotalBytes, typeGauge, "Size of the filesystem of the sandbox root (area=root) or of an area's base directory that is a mount of its own.", diskArea},
	{HostDiskFreeBytes, typeGauge, "Free bytes of that filesystem, root's reserve included.", diskArea},
	{HostDiskAvailableBytes, typeGauge, "Bytes of that filesystem a non-root process may still use (df's Avail).", diskArea},
	{HostDiskTotalInodes, typeGauge, "Inodes of that filesystem; 0 where it allocates them dynamically.", diskArea},
	{HostDiskFreeInodes, typeGauge, "Free inodes of that filesystem.", diskArea},
	{HostDiskFreeWarnRatio, typeGauge, "The setting health_disk_free_warn_percent, as a ratio of available to total.", nil},
	{HostDiskFreeCriticalRatio, typeGauge, "The setting health_disk_free_critical_percent, as a ratio of available to total.", nil},
	{HostLoad1, typeGauge, "1-minute load average.", nil},
	{HostLoad5, typeGauge, "5-minute load average.", nil},
	{HostLoad15, typeGauge, "15-minute load average.", nil},
	{HostCPUCores, typeGauge, "CPU cores.", nil},
	{HostCPUBusyRatio, typeGauge, "Share of CPU time not idle since the previous scrape, across all cores (absent when unknown).", nil},
	{HostMemoryTotalBytes, typeGauge, "Memory.", nil},
	{HostMemoryAvailableBytes, typeGauge, "Memory available without swapping.", nil},
	{HostSwapTotalBytes, typeGauge, "Swap space.", nil},
	{HostSwapFreeBytes, typeGauge, "Free swap space.", nil},
	{HostQuotaEnforced, typeGauge, "1 while the kernel enforces XFS project quotas on the root, 0 on the fallback or with enforcement off.", nil},
	{HostStoreLatencySeconds, typeGauge, "Latency of a trivial query on the store.", nil},

	{DockerContainersRunning, typeGauge, "Containers running.", nil},
	{DockerContainers, typeGauge, "Containers, running or not.", nil},
	{DockerImages, typeGauge, "Images.", nil},
	{DockerImagesBytes, typeGauge, "Bytes images take (docker system df), as of the cached disk usage.", nil},
	{DockerContainersBytes, typeGauge, "Bytes containers' writable layers take, as of the cached disk usage.", nil},
	{DockerBuildCacheBytes, typeGauge, "Bytes the build cache takes, as of the cached disk usage.", nil},
	{DockerVolumesBytes, typeGauge, "Bytes volumes take, as of the cached disk usage.", nil},

	{CollectorSuccess, typeGauge, "1 when a collector answered at this scrape, 0 when it failed (its series are then absent).", []string{LabelCollector}},
	{BuildInfo, typeGauge, "Always 1: the build of the xfsq serving the metrics.", []string{LabelVersion, LabelGoVersion}},
}
