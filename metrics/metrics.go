// Package metrics names what xfsq exports to Prometheus (SPEC §10), so that
// the server's /metrics, the dashboard and any alert rule agree on one
// spelling. Labels are project and area only: their values are bounded by
// the projects a root holds, never by paths, runs or users.
//
// It owns the names, their help and their labels. It must never read the
// store, walk a tree or ask the kernel itself — its figures come from the
// library's reads (project.Report and the sweep and snapshot results) —
// and it must never add a label whose values a tenant controls.
package metrics

// A metric's name, type, help and labels.
type Metric struct {
	Name, Type, Help string
	Labels           []string
}

// Label names.
const (
	LabelProject = "project"
	LabelArea    = "area"
	LabelKind    = "kind" // soft or hard, of a limit
)

// Metric names.
const (
	TreeUsedBytes          = "xfsq_tree_used_bytes"
	TreeLimitBytes         = "xfsq_tree_limit_bytes"
	TreeUsedInodes         = "xfsq_tree_used_inodes"
	SweepEvictedBytesTotal = "xfsq_sweep_evicted_bytes_total"
	SweepDurationSeconds   = "xfsq_sweep_duration_seconds"
	WalkDurationSeconds    = "xfsq_walk_duration_seconds"
	QuotaExceeded          = "xfsq_quota_exceeded"
	typeGauge, typeCounter = "gauge", "counter"
	typeHistogram          = "histogram"
)

var tree = []string{LabelProject, LabelArea}

// All lists every metric xfsq exports besides the Go and process collectors.
var All = []Metric{
	{TreeUsedBytes, typeGauge, "Bytes a tree holds: the kernel's count on XFS, the last walk plus xfsq's writes on the fallback.", tree},
	{TreeLimitBytes, typeGauge, "A tree's byte limit; 0 is none.", []string{LabelProject, LabelArea, LabelKind}},
	{TreeUsedInodes, typeGauge, "Files and directories a tree holds.", tree},
	{SweepEvictedBytesTotal, typeCounter, "Bytes sweeps deleted.", tree},
	{SweepDurationSeconds, typeHistogram, "How long a sweep of a project took.", []string{LabelProject}},
	{WalkDurationSeconds, typeHistogram, "How long a walk of a tree took.", tree},
	{QuotaExceeded, typeGauge, "1 while a tree is at or over a hard limit, or over a soft one past its grace.", tree},
}
