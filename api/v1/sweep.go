package apiv1

import "time"

// SweepPlan is a dry run's answer: the plan, kept under PlanID until
// ExpiresAt, what applying it would delete, what it leaves and why.
type SweepPlan struct {
	PlanID       string         `json:"plan_id"`
	Project      string         `json:"project"`
	DryRun       bool           `json:"dry_run"`
	Areas        []string       `json:"areas"`
	MadeAt       time.Time      `json:"made_at"`
	ExpiresAt    time.Time      `json:"expires_at"`
	Entries      []PlannedEntry `json:"entries"`
	PlannedBytes uint64         `json:"planned_bytes"`
	Skipped      []SweepSkip    `json:"skipped"`
	OverSoft     []OverSoft     `json:"over_soft"`
}

// PlannedEntry is one entry a plan would delete, and the policy that chose it.
type PlannedEntry struct {
	Path      string    `json:"path"`
	Area      string    `json:"area"`
	SizeBytes uint64    `json:"size_bytes"`
	NewestAt  time.Time `json:"newest_at"`
	Reason    string    `json:"reason"`
	Policy    string    `json:"policy"`
}

// SweepSkip is an entry (or project) a sweep left alone, with why.
type SweepSkip struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// OverSoft is an area still over its soft limit after a sweep.
type OverSoft struct {
	Area      string `json:"area"`
	UsedBytes uint64 `json:"used_bytes"`
	SoftBytes uint64 `json:"soft_bytes"`
}

// SweepResult is what a sweep did: every deletion made, with the bytes it
// freed, and every entry left alone with why.
type SweepResult struct {
	SweepID         string         `json:"sweep_id"`
	PlanID          string         `json:"plan_id,omitempty"`
	Project         string         `json:"project"`
	DryRun          bool           `json:"dry_run"`
	Deleted         []Deleted      `json:"deleted"`
	FreedBytes      uint64         `json:"freed_bytes"`
	Skipped         []SweepSkip    `json:"skipped"`
	PerPolicy       map[string]int `json:"per_policy"`
	OverSoft        []OverSoft     `json:"over_soft"`
	DurationSeconds float64        `json:"duration_seconds"`
	// SettledPending counts deletions of earlier, interrupted operations
	// whose records this sweep settled first.
	SettledPending int `json:"settled_pending"`
}

// Deleted is one deletion a sweep made.
type Deleted struct {
	Path       string `json:"path"`
	FreedBytes uint64 `json:"freed_bytes"`
	Reason     string `json:"reason"`
	Policy     string `json:"policy"`
	// RemovedFiles counts the names unlinked, directories included.
	RemovedFiles uint64 `json:"removed_files"`
	// Partial: part of the entry was left in place (see skipped).
	Partial bool `json:"partial,omitempty"`
}
