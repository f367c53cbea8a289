package apiv1

import "time"

// Report is GET /v1/workspace/storage/report: the trees the query asked
// for (?project=, ?area=, ?over=, ?sort=), as xfsq report shows them, and
// what a reader should be told besides. The backend is given once, here;
// the trees' own backend member is absent.
type Report struct {
	Backend Backend      `json:"backend"`
	Trees   []TreeStatus `json:"trees"`
	// AtHardLimit: a tree shown is at or over a hard limit (bytes or inodes).
	AtHardLimit bool `json:"at_hard_limit"`
	// CheckFailed is AtHardLimit when ?check=1 asked, as report --check's exit 1.
	CheckFailed bool `json:"check_failed,omitempty"`
	// OldestWalkAt, on the fallback: when the oldest walk a figure shown
	// starts from began; writes made outside xfsq since are not counted.
	OldestWalkAt *time.Time `json:"oldest_walk_at,omitempty"`
	// Unowned is the space no tree holds, on a kernel backend.
	Unowned  *Unowned      `json:"unowned,omitempty"`
	Warnings []TreeWarning `json:"warnings"`
	// Promise is what the hard byte limits of the trees shown promise of
	// the root's disk; absent when the disk's size could not be read.
	Promise *ReportPromise `json:"promise,omitempty"`
	// ReclaimableBytes is what the sweep policies would free in the trees
	// shown, as last planned; absent until a plan covered one of them.
	ReclaimableBytes *uint64 `json:"reclaimable_bytes,omitempty"`
}

// Promised is how much hard byte limits promise of a disk, as an Incus
// pool shows it: the sum of the limits, how many trees have none
// (unbounded: promised the whole disk), and the ratio of the sum to the
// disk's size (over 1: overcommitted).
type Promised struct {
	PromisedBytes   uint64  `json:"promised_bytes"`
	UnlimitedTrees  int     `json:"unlimited_trees"`
	OvercommitRatio float64 `json:"overcommit_ratio"`
}

// ReportPromise is what a report's trees promise of the root's disk,
// whose size is DiskBytes.
type ReportPromise struct {
	DiskBytes uint64 `json:"disk_bytes"`
	Promised
}

// The orders a report is sorted in (?sort=): by project, else largest first.
const (
	SortByProject = "project"
	SortByUsed    = "used"
	SortByPercent = "percent"
	SortByGrowth  = "growth"
)

// TreeWarning is a tree whose figure should not be taken at face value.
type TreeWarning struct {
	Kind    WarningKind `json:"kind"`
	Project string      `json:"project"`
	Area    string      `json:"area"`
	Detail  string      `json:"detail,omitempty"`
}

// WarningKind says why a tree's figure is doubtful.
type WarningKind string

const (
	// WarnStale: a fallback figure from a walk older than the snapshot
	// interval (or none): writes made outside xfsq since are missing.
	WarnStale WarningKind = "stale"
	// WarnDrift: the limits in force differ from the recorded ones.
	WarnDrift WarningKind = "drift"
	// WarnEscape: the last walk and the kernel's count disagree by more than 1 %.
	WarnEscape WarningKind = "escape"
)

// Unowned is the space of the root's filesystem no tree holds.
type Unowned struct {
	UsedBytes     uint64 `json:"used_bytes"`
	ProjectsBytes uint64 `json:"projects_bytes"`
	UnownedBytes  uint64 `json:"unowned_bytes"`
	// OtherIDsBytes is, of UnownedBytes, what project 0 and IDs that are
	// no tree's hold.
	OtherIDsBytes uint64 `json:"other_ids_bytes"`
}
