package journal

import (
	"encoding/json"
	"time"
)

// Limits are a tree's quota limits as a record states them (0: none).
type Limits struct {
	BytesSoft  uint64 `json:"bytes_soft"`
	BytesHard  uint64 `json:"bytes_hard"`
	InodesSoft uint64 `json:"inodes_soft"`
	InodesHard uint64 `json:"inodes_hard"`
}

// Left is one entry a removal left in place, and why.
type Left struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// Skip is one entry a sweep left alone, and why.
type Skip struct {
	Project string `json:"project,omitempty"`
	Path    string `json:"path"`
	Reason  string `json:"reason"`
}

// ProjectAdded: a project and its trees were made.
type ProjectAdded struct {
	Backend string `json:"backend"`
	Trees   []Tree `json:"trees"`
}

// Tree is one tree of a project as it was added.
type Tree struct {
	Project   string `json:"project"`
	Area      string `json:"area"`
	Path      string `json:"path"` // relative to the sandbox root
	Backend   string `json:"backend"`
	FSUUID    string `json:"fs_uuid,omitempty"`
	ProjectID uint32 `json:"project_id"`
	Limits    Limits `json:"limits"`
}

// ProjectRemoved: a project was removed, its trees purged or left on disk.
type ProjectRemoved struct {
	Project string `json:"project"`
	Purged  bool   `json:"purged"`
	// Forced: removed although leases were held.
	Forced      bool     `json:"forced,omitempty"`
	HeldLeases  []string `json:"held_leases,omitempty"`
	EndedLeases []string `json:"ended_leases"`
	// KeptIDs are quota IDs still carried by files left on disk.
	KeptIDs     []string     `json:"kept_ids"`
	Left        []string     `json:"left"` // trees left on disk
	PurgedTrees []PurgedTree `json:"purged_trees"`
}

// PurgedTree is what purging one tree removed, and what it left.
type PurgedTree struct {
	Path    string `json:"path"`
	State   string `json:"state"` // StateDone or StatePartial
	Entries uint64 `json:"removed_entries"`
	Bytes   uint64 `json:"freed_bytes"`
	Inodes  uint64 `json:"freed_inodes"`
	Left    []Left `json:"left"`
}

// QuotaChanged: a tree's limits were changed.
type QuotaChanged struct {
	Area      string `json:"area"`
	ProjectID uint32 `json:"project_id"`
	Old       Limits `json:"old"`
	New       Limits `json:"new"`
}

// A deletion's states (Evicted.State): pending is written before anything is removed; a
// later record of the same deletion settles it.
const (
	StatePending = "pending"
	// StateDone: the entry is gone.
	StateDone = "done"
	// StatePartial: not all of it went (perhaps nothing), the rest was
	// left in place with why.
	StatePartial = "partial"
	// StateFailed: the removal stopped on an error; removed_entries says
	// how far it got.
	StateFailed = "failed"
	// StateAbandoned: the host that made the deletion was retired while it
	// was pending; whether the entry went is unknown (no host is left to
	// look), so it is claimed neither done nor failed.
	StateAbandoned = "abandoned"
)

// The policies of the deletions outside a sweep, as their records name
// them (Evicted.Policy). They are data, as first journalled — records
// already in a store carry them — and not a shell's words for the
// operation: a renderer shows them as they are.
const (
	PolicyPurge       = "project rm --purge"
	PolicyFilesRemove = "files rm"
)

// Evicted is one deletion's record (a sweep's, a purge's or a files rm's).
type Evicted struct {
	SweepID string `json:"sweep_id,omitempty"` // none outside sweeps (purge, files rm)
	Area    string `json:"area"`
	// Path is the path removed, relative to the sandbox root, as resolved
	// from descriptors (never a path through a link).
	Path string `json:"path"`
	// Bytes is, while pending, what the entry measured just before; once
	// settled, the bytes its removal freed (inodes whose last link went).
	// Records journalled before CHANGELOG.md's first entry name it "bytes"
	// (UnmarshalJSON reads both).
	Bytes  uint64 `json:"freed_bytes"`
	Reason string `json:"reason"`
	Policy string `json:"policy"`
	State  string `json:"state"` // StatePending, StateDone, StatePartial, StateFailed, StateAbandoned
	Error  string `json:"error,omitempty"`
	// What the removal really did, once settled: names unlinked, inodes
	// freed, and what was left in place with why.
	Entries uint64 `json:"removed_entries"`
	Inodes  uint64 `json:"freed_inodes"`
	Left    []Left `json:"left,omitempty"`
	// Holder is the process making the deletion (pid.start@host): a
	// pending record whose holder still runs is a deletion in progress,
	// not an interrupted one.
	Holder string `json:"holder,omitempty"`
	// DeletionID tells apart deletions outside sweeps, which share no sweep
	// id: two files rm of one path must not settle each other's record.
	DeletionID string `json:"deletion_id,omitempty"`
	// Recovered: settled by a later process (a sweep or doctor) that found
	// the entry gone after its writer stopped.
	Recovered bool `json:"recovered,omitempty"`
}

// UnmarshalJSON reads a record of either form: those made before the
// field names of docs/design/README.md#output-conventions held the size as "bytes".
func (r *Evicted) UnmarshalJSON(b []byte) error {
	type plain Evicted
	var v struct {
		plain
		OldBytes *uint64 `json:"bytes"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*r = Evicted(v.plain)
	if v.OldBytes != nil && r.Bytes == 0 {
		r.Bytes = *v.OldBytes
	}
	return nil
}

// QuotaExceeded: a tree reached one of its limits, journalled once per
// crossing by whoever saw it first (journal.SeenBy…). Records made before
// every limit was journalled name no Limit (it was the soft one) and
// SeenBy; a sweep's states bytes only, and names the sweep.
type QuotaExceeded struct {
	Area string `json:"area"`
	// Limit is which limit was reached: LimitBytesSoft, LimitBytesHard, …
	Limit string `json:"limit,omitempty"`
	// LimitValue is that limit's figure (bytes or inodes).
	LimitValue *uint64 `json:"limit_value,omitempty"`
	UsedBytes  uint64  `json:"used_bytes"`
	// UsedInodes is nil in a sweep's record.
	UsedInodes *uint64 `json:"used_inodes,omitempty"`
	BytesSoft  uint64  `json:"bytes_soft"`
	// InodesSoft, BytesHard and InodesHard are nil in a sweep's record.
	InodesSoft *uint64 `json:"inodes_soft,omitempty"`
	BytesHard  *uint64 `json:"bytes_hard,omitempty"`
	InodesHard *uint64 `json:"inodes_hard,omitempty"`
	SweepID    string  `json:"sweep_id,omitempty"`
	// GraceEndsAt, for a soft limit, is when its grace runs out (after
	// which writes are refused); nil when unknown or for a hard limit.
	GraceEndsAt *time.Time `json:"grace_ends_at,omitempty"`
	SeenBy      string     `json:"seen_by,omitempty"`
}

// Snapshot: a scheduled snapshot pass walked these trees.
type Snapshot struct {
	Trees     []SnapshotTree `json:"trees"`
	FreeBytes uint64         `json:"free_bytes"`
	Failed    int            `json:"failed"`
}

// SnapshotTree is one tree's walk in a snapshot pass.
type SnapshotTree struct {
	Project   string `json:"project"`
	Area      string `json:"area"`
	SizeBytes uint64 `json:"size_bytes"`
	Files     uint64 `json:"total_files"`
	Partial   bool   `json:"partial,omitempty"`
	Error     string `json:"error,omitempty"`
	// DurationSeconds is the walk's duration; nil in passes journalled
	// before walks were timed.
	DurationSeconds *float64 `json:"duration_seconds"`
}

// Swept: a sweep ended.
type Swept struct {
	SweepID         string         `json:"sweep_id"`
	FreedBytes      uint64         `json:"freed_bytes"`
	EvictedEntries  int            `json:"evicted_entries"`
	PerPolicy       map[string]int `json:"per_policy"`
	Skipped         []Skip         `json:"skipped"`
	DurationSeconds float64        `json:"duration_seconds"`
	Projects        []string       `json:"projects"`
	// PlanID is the reviewed plan the sweep applied, if it applied one.
	PlanID string `json:"plan_id,omitempty"`
}

// UnmarshalJSON reads a record of either form: those made before the
// field names of docs/design/README.md#output-conventions said entries, bytes_freed and duration_ms.
func (r *Swept) UnmarshalJSON(b []byte) error {
	type plain Swept
	var v struct {
		plain
		OldEntries    *int    `json:"entries"`
		OldFreedBytes *uint64 `json:"bytes_freed"`
		OldDurationMS *int64  `json:"duration_ms"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*r = Swept(v.plain)
	if v.OldEntries != nil && r.EvictedEntries == 0 {
		r.EvictedEntries = *v.OldEntries
	}
	if v.OldFreedBytes != nil && r.FreedBytes == 0 {
		r.FreedBytes = *v.OldFreedBytes
	}
	if v.OldDurationMS != nil && r.DurationSeconds == 0 {
		r.DurationSeconds = float64(*v.OldDurationMS) / 1000
	}
	return nil
}

// SettingChanged: a setting was set, or reset to what applies without it.
type SettingChanged struct {
	Key       string `json:"key"`
	Old       string `json:"old"`
	OldSource string `json:"old_source"`
	New       string `json:"new"`
	// NewSource is where the value that applies after a reset comes from.
	NewSource string `json:"new_source,omitempty"`
	Reset     bool   `json:"reset,omitempty,string"`
}

// Repaired: doctor --fix repaired a finding.
type Repaired struct {
	Kind      string `json:"kind"`
	Project   string `json:"project,omitempty"`
	Area      string `json:"area,omitempty"`
	Path      string `json:"path,omitempty"`
	ProjectID uint32 `json:"project_id,omitempty"`
	Detail    string `json:"detail"`
	Fix       string `json:"fix"`
	Fixed     bool   `json:"fixed"`
	Error     string `json:"error,omitempty"`
}

// JournalPruned: one run of the journal's retention removed this host's
// records older than Before, in Batches short transactions, keeping the
// pending deletions among them (KeptPending), which are never pruned.
type JournalPruned struct {
	Before      time.Time `json:"before"`
	Retention   string    `json:"retention"`
	Events      int64     `json:"events"`
	Batches     int       `json:"batches"`
	KeptPending int64     `json:"kept_pending"`
}

// RootInitialised: xfsq init made this store's first record of a root.
type RootInitialised struct {
	Root string `json:"root"`
	// Adopted are the trees found under the root that predate xfsq.
	Adopted []string `json:"adopted"`
}

// HostRetired: a host was retired from the fleet (xfsq host retire). Its
// history stays; Abandoned deletions it left pending were settled so.
type HostRetired struct {
	Host      string `json:"retired_host"`
	Abandoned int    `json:"abandoned_deletions"`
}

func (HostRetired) Type() Type { return TypeHostRetired }

// RootBound: the store bound this host name to a root's identity.
type RootBound struct {
	Root   string `json:"root"`
	RootID string `json:"root_id"`
	// FSID identifies the filesystem holding the root ("" when it has none).
	FSID string `json:"fs_id,omitempty"`
	// Why: "init", "upgrade" (a root bound on its first open by a binary
	// that binds roots) or "takeover".
	Why string `json:"why"`
	// TookFrom is the root that held the host name before a takeover.
	TookFrom *BoundRoot `json:"took_from,omitempty"`
}

// BoundRoot is a root as a binding names it.
type BoundRoot struct {
	Root   string `json:"root"`
	RootID string `json:"root_id"`
	FSID   string `json:"fs_id,omitempty"`
}

// HolderTakenOver: a lock or pass whose holder is gone was taken over.
type HolderTakenOver struct {
	// What was taken: "sweep_lock" (Name is the project), "pass" (Name
	// is the pass), or a project's half-done "add" or "remove" (Name is
	// the project).
	What string `json:"what"`
	Name string `json:"name"`
	From string `json:"from"`
	By   string `json:"by"`
	// Why the holder counts as gone: its lease expired (ExpiredAt), or its
	// process no longer runs on this machine.
	Why       string    `json:"why"`
	ExpiredAt time.Time `json:"expired_at,omitzero"`
}

func (ProjectAdded) Type() Type    { return TypeProjectAdded }
func (ProjectRemoved) Type() Type  { return TypeProjectRemoved }
func (QuotaChanged) Type() Type    { return TypeQuotaChanged }
func (Evicted) Type() Type         { return TypeEvicted }
func (QuotaExceeded) Type() Type   { return TypeQuotaExceeded }
func (Snapshot) Type() Type        { return TypeSnapshot }
func (Swept) Type() Type           { return TypeSwept }
func (SettingChanged) Type() Type  { return TypeSettingChanged }
func (Repaired) Type() Type        { return TypeRepaired }
func (RootInitialised) Type() Type { return TypeRootInitialised }
func (RootBound) Type() Type       { return TypeRootBound }
func (HolderTakenOver) Type() Type { return TypeHolderTakenOver }
func (JournalPruned) Type() Type   { return TypeJournalPruned }
