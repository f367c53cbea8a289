package apiv1

import (
	"encoding/json"
	"time"
)

// Backend is the quota backend in force: on XFS the kernel enforces the
// limits; on the fallback xfsq does, and Reason says why it is in force.
type Backend struct {
	Kind     string `json:"kind"` // xfs or fallback
	Enforced bool   `json:"enforced"`
	Reason   string `json:"reason,omitempty"`
}

// ProjectRecord is one line of GET /v1/workspace/storage/projects: a
// project as the store keeps it, without reading its usage.
type ProjectRecord struct {
	Project   string    `json:"project"`
	State     string    `json:"state"`
	CreatedAt time.Time `json:"created_at"`
}

// Project is a project with the status of each of its trees
// (POST …/projects, PATCH …/projects/{id}).
type Project struct {
	Project   string       `json:"project"`
	State     string       `json:"state"`
	CreatedAt time.Time    `json:"created_at"`
	Backend   Backend      `json:"backend"`
	Trees     []TreeStatus `json:"trees"`
}

// TreeStatus is one tree's limits and usage as the backend reports them.
type TreeStatus struct {
	Project    string  `json:"project"`
	Area       string  `json:"area"`
	Path       string  `json:"path"`
	ProjectID  uint32  `json:"project_id"`
	Backend    Backend `json:"backend,omitzero"` // absent in an answer: its own backend is the tree's
	UsedBytes  uint64  `json:"used_bytes"`
	UsedInodes uint64  `json:"used_inodes"`
	BytesSoft  uint64  `json:"bytes_soft"`
	BytesHard  uint64  `json:"bytes_hard"`
	InodesSoft uint64  `json:"inodes_soft"`
	InodesHard uint64  `json:"inodes_hard"`
	Percent    float64 `json:"percent"` // of the byte hard limit; 0 when there is none
	// BytesGraceEndsAt and InodesGraceEndsAt are set while usage is over a
	// soft limit: when its grace runs out, after which admission denies.
	BytesGraceEndsAt  *time.Time `json:"bytes_grace_ends_at,omitempty"`
	InodesGraceEndsAt *time.Time `json:"inodes_grace_ends_at,omitempty"`
	// Drift is set when the limits in force differ from the recorded ones.
	Drift           string     `json:"drift,omitempty"`
	Growth24hBytes  *int64     `json:"growth_24h_bytes"`
	Growth7dBytes   *int64     `json:"growth_7d_bytes"`
	LastActivityAt  *time.Time `json:"last_activity_at"`
	UsageWalkedAt   *time.Time `json:"usage_walked_at,omitempty"` // fallback only
	UsageAgeSeconds *float64   `json:"usage_age_seconds,omitempty"`
	Stale           bool       `json:"stale,omitempty"`
	WalkBytes       *uint64    `json:"walk_bytes,omitempty"`
	Escape          string     `json:"escape,omitempty"`
	// FullInSeconds is how long until the tree reaches its hard byte limit
	// at its trend (0: it has); absent when not filling or not known.
	FullInSeconds *float64 `json:"full_in_seconds,omitempty"`
	// ReclaimableBytes is what the sweep policies would free in the tree
	// now, as its last plan found; absent until one was made.
	ReclaimableBytes *uint64 `json:"reclaimable_bytes,omitempty"`
}

// Decision is admission's answer: may a run of the project start.
type Decision string

const (
	DecisionOK   Decision = "ok"
	DecisionWarn Decision = "warn" // over a soft limit, within its grace
	DecisionDeny Decision = "deny" // at a hard limit, or a soft one past its grace
)

// Admission is GET …/projects/{id}/admission: a deny is an answer, not an error.
type Admission struct {
	Project  string       `json:"project"`
	Decision Decision     `json:"decision"`
	Message  string       `json:"message"`
	Backend  Backend      `json:"backend"`
	Trees    []TreeStatus `json:"trees"`
}

// Lease is a run's lease on a project and whether it still holds.
type Lease struct {
	Project   string    `json:"project"`
	Run       string    `json:"run"`
	ExpiresAt time.Time `json:"expires_at"`
	Active    bool      `json:"active"`
	// KeptLonger: a renewal asked for less than the lease already had, and
	// the lease kept its later expiry.
	KeptLonger bool `json:"kept_longer,omitempty"`
}

// Event is one record of the journal.
type Event struct {
	ID         int64           `json:"id"`
	RecordedAt time.Time       `json:"recorded_at"`
	Type       string          `json:"type"`
	Host       string          `json:"host"`
	Project    string          `json:"project,omitempty"`
	Actor      string          `json:"actor"`
	Payload    json.RawMessage `json:"payload"`
}

// EventPage is one page of the journal, newest first.
type EventPage struct {
	Events []Event `json:"events"`
	// Next is the cursor of the page after this one; "" on the last.
	Next string `json:"next,omitempty"`
}

// Overview is GET /v1/workspace/storage: the whole root at a glance.
type Overview struct {
	GeneratedAt time.Time         `json:"generated_at"`
	Root        string            `json:"root"`
	Host        string            `json:"host"`
	Backend     Backend           `json:"backend"`
	Disk        OverviewDisk      `json:"disk"`
	Projects    []ProjectOverview `json:"projects"`
}

// OverviewSummary is GET /v1/workspace/storage/summary: the overview's
// disk, how many projects the caller may see, and the fullest (by the
// fraction of the workspace's hard byte limit used, then bytes; 5) and the
// top growers in 24 hours (those that grew; 8) of them.
type OverviewSummary struct {
	GeneratedAt   time.Time         `json:"generated_at"`
	Root          string            `json:"root"`
	Host          string            `json:"host"`
	Backend       Backend           `json:"backend"`
	Disk          OverviewDisk      `json:"disk"`
	ProjectsTotal int               `json:"projects_total"`
	Fullest       []ProjectOverview `json:"fullest"`
	Growers       []ProjectOverview `json:"growers"`
}

// OverviewDisk is the filesystem holding the root.
type OverviewDisk struct {
	TotalBytes uint64 `json:"total_bytes"`
	FreeBytes  uint64 `json:"free_bytes"`
	// UnownedBytes and OtherIDsBytes, on a kernel backend: what df says is
	// used less what the projects hold, and of it what project 0 and IDs
	// that are no tree's hold.
	UnownedBytes  *uint64 `json:"unowned_bytes,omitempty"`
	OtherIDsBytes *uint64 `json:"other_ids_bytes,omitempty"`
	// FullInSeconds is how long until the disk is full at its trend
	// (null: not filling, or not known); ReclaimableBytes what the sweep
	// policies would free in every tree, as last planned (for a reader
	// limited to some projects, both of their trees).
	FullInSeconds    *float64 `json:"full_in_seconds"`
	ReclaimableBytes uint64   `json:"reclaimable_bytes"`
	// PromisedBytes is the sum of every tree's hard byte limit (a limited
	// reader's: of its projects' trees),
	// UnlimitedTrees the trees without one, OvercommitRatio the sum over
	// the disk's size (above 1: more promised than the disk holds).
	PromisedBytes   uint64  `json:"promised_bytes"`
	UnlimitedTrees  int     `json:"unlimited_trees"`
	OvercommitRatio float64 `json:"overcommit_ratio"`
}

// ProjectOverview is one project's line of the overview.
type ProjectOverview struct {
	Project        string `json:"project"`
	WorkspaceBytes uint64 `json:"workspace_bytes"`
	WorkspaceFiles uint64 `json:"workspace_files"`
	CacheBytes     uint64 `json:"cache_bytes"`
	// QuotaBytes is the workspace's hard byte limit (0: none); QuotaUsed
	// its fraction in use, null without a limit.
	QuotaBytes     uint64     `json:"quota_bytes"`
	QuotaUsed      *float64   `json:"quota_used"`
	QuotaSoftBytes uint64     `json:"quota_soft_bytes"` // the workspace's soft byte limit; 0: none
	TopPaths       []TopPath  `json:"top_paths"`
	Growth         Growth     `json:"growth"`
	LastActivityAt *time.Time `json:"last_activity_at"`
	UsageAsOf      *time.Time `json:"usage_as_of,omitempty"`
	// FullInSeconds is the soonest any of the project's trees reaches its
	// hard byte limit at its trend (null: none filling, or not known), in
	// the tree of FullInArea; ReclaimableBytes what the sweep policies
	// would free in its trees, as last planned.
	FullInSeconds    *float64 `json:"full_in_seconds"`
	FullInArea       string   `json:"full_in_area,omitempty"`
	ReclaimableBytes uint64   `json:"reclaimable_bytes"`
}

// TopPath is one of a tree's largest entries.
type TopPath struct {
	Path  string `json:"path"`
	Bytes uint64 `json:"bytes"`
}

// Growth is the workspace's change in allocated bytes; null until known.
type Growth struct {
	Last24h *int64 `json:"24h"`
	Last7d  *int64 `json:"7d"`
}

// ProjectStorage is GET …/projects/{id}: each tree's usage and limits,
// and its tree of sizes from the last snapshot.
type ProjectStorage struct {
	Project string        `json:"project"`
	Backend Backend       `json:"backend"`
	Trees   []TreeStorage `json:"trees"`
}

// TreeStorage is one tree of a project with its last snapshot (null
// SnapshotAt and Tree until one is taken).
type TreeStorage struct {
	TreeStatus
	SnapshotAt *time.Time `json:"snapshot_at"`
	Partial    bool       `json:"partial"`
	Tree       *Node      `json:"tree"`
	TopFiles   []File     `json:"top_files"`
}

// Node is a directory (or the tree's root, path ".") of a snapshot.
type Node struct {
	Path             string    `json:"path"`
	SizeBytes        uint64    `json:"size_bytes"`
	ApparentBytes    uint64    `json:"apparent_bytes"`
	TotalFiles       uint64    `json:"total_files"`
	TotalDirs        uint64    `json:"total_dirs"`
	NewestModifiedAt time.Time `json:"newest_modified_at"`
	Children         []*Node   `json:"children,omitempty"`
}

// File is one of a tree's largest files.
type File struct {
	Path      string `json:"path"`
	SizeBytes uint64 `json:"size_bytes"`
}

// Left is part of a deletion left in place (a mount point, an entry that
// changed meanwhile), with why.
type Left struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// RemoveResult is DELETE …/projects/{id}: what a removal did (or, dry,
// would do). Forced: removed although leases were held; HeldLeases are
// the runs holding an unexpired lease that a forced removal ends (without
// force a removal, dry or not, is refused); EndedLeases the runs whose
// leases it ended, held or lapsed; KeptIDs the IDs still carried by files
// left on disk, reserved until those files are gone so that no other
// project is charged for them; Left the trees left on disk (without a
// purge); PurgedTrees what a purge really removed of each tree and what it
// left in place (mount points) with why; WouldPurge, for a dry run with a
// purge, each tree that would be deleted with its usage as the backend
// counts it now.
type RemoveResult struct {
	Project     string      `json:"project"`
	Purged      bool        `json:"purged"`
	DryRun      bool        `json:"dry_run,omitempty"`
	Forced      bool        `json:"forced,omitempty"`
	HeldLeases  []string    `json:"held_leases,omitempty"`
	EndedLeases []string    `json:"ended_leases"`
	KeptIDs     []string    `json:"kept_ids"`
	Left        []string    `json:"left"`
	PurgedTrees []Purged    `json:"purged_trees"`
	WouldPurge  []PurgePlan `json:"would_purge,omitempty"`
}

// Purged is what a purge removed of one tree.
type Purged struct {
	Path           string `json:"path"`
	State          string `json:"state"` // as journalled: done, partial
	RemovedEntries uint64 `json:"removed_entries"`
	FreedBytes     uint64 `json:"freed_bytes"`
	FreedInodes    uint64 `json:"freed_inodes"`
	Left           []Left `json:"left"`
}

// PurgePlan is one tree a dry run's purge would delete.
type PurgePlan struct {
	Path   string `json:"path"`
	Area   string `json:"area"`
	Bytes  uint64 `json:"bytes"`
	Inodes uint64 `json:"inodes"`
}

// Entry is one directory entry of a listing.
type Entry struct {
	Name       string    `json:"name"`
	Type       string    `json:"type"` // file, dir, symlink, other
	SizeBytes  int64     `json:"size_bytes"`
	ModifiedAt time.Time `json:"modified_at"`
}

// Listing is GET …/files/{dir}: a directory of a tree, a page at a time.
type Listing struct {
	Project string  `json:"project"`
	Area    string  `json:"area"`
	Path    string  `json:"path"`
	Entries []Entry `json:"entries"`
	// NextCursor is set when more entries follow: ask again with
	// ?cursor=NEXT_CURSOR. It is the page's last name, base64url-encoded
	// (a name need not be UTF-8).
	NextCursor string `json:"next_cursor,omitempty"`
}

// PutResult is PUT …/files/{path}: what a write did.
type PutResult struct {
	Path         string `json:"path"` // relative to the sandbox root
	WrittenBytes uint64 `json:"written_bytes"`
	Replaced     bool   `json:"replaced"`
}

// FileRemoveResult is DELETE …/files/{path}: what a removal really did.
type FileRemoveResult struct {
	Path           string `json:"path"`
	State          string `json:"state"` // as journalled: done, partial, failed
	RemovedEntries uint64 `json:"removed_entries"`
	FreedBytes     uint64 `json:"freed_bytes"`
	RemovedFiles   uint64 `json:"removed_files"`
	Left           []Left `json:"left"`
}

// Healthz is GET /healthz: the server is alive.
type Healthz struct {
	Status string `json:"status"` // ok
}

// Ready is GET /readyz when the server can serve: its store answers.
type Ready struct {
	Status  string `json:"status"` // ready
	Backend string `json:"backend"`
}

// TreeDiff is GET …/projects/{id}/diff: what changed in one tree between
// two stored snapshots. FromAt is the snapshot compared from (the newest
// kept at or before since ago), ToAt the newest. Partial: the newest
// snapshot's walk ran out of its budget, so what it did not reach reads as
// shrunk. Grew and Shrank are the directories whose size changed most,
// each the deepest that carries its change (a directory whose change is
// nearly all one child's is left to the child), largest change first; New
// and Gone are top-level entries (directories, and files among the tree's
// largest) there at one end only.
type TreeDiff struct {
	Project     string       `json:"project"`
	Area        string       `json:"area"`
	FromAt      time.Time    `json:"from_at"`
	ToAt        time.Time    `json:"to_at"`
	Partial     bool         `json:"partial"`
	FromBytes   uint64       `json:"from_bytes"`
	ToBytes     uint64       `json:"to_bytes"`
	ChangeBytes int64        `json:"change_bytes"`
	Grew        []PathChange `json:"grew"`
	Shrank      []PathChange `json:"shrank"`
	New         []PathChange `json:"new"`
	Gone        []PathChange `json:"gone"`
}

// PathChange is one path's size at each end of a diff (0 where absent).
type PathChange struct {
	Path        string `json:"path"`
	FromBytes   uint64 `json:"from_bytes"`
	ToBytes     uint64 `json:"to_bytes"`
	ChangeBytes int64  `json:"change_bytes"`
}
