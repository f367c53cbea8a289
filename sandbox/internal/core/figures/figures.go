// Package figures is the vocabulary of a tree's figures and the rules that
// judge them, beneath the core: what a project and each of its trees show
// (Project, TreeStatus, with the backend object every answer carries), how
// fresh a read must be (Read) and how old a fallback figure is, the grace
// a soft limit runs on, and admission's rule (Judge, Exceeded) with the
// warnings a limit change gives (OverLimits).
//
// It is a leaf the core, the use cases beside it and the facade all speak:
// pure functions of their arguments. It must never read the store, the
// kernel or a tree, and never import the core, a use case or a shell.
package figures

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/xfsq/xfsq/internal/jsonfmt"
	"github.com/xfsq/xfsq/quota"
	"github.com/xfsq/xfsq/units"
)

// Project is a project with the status of each of its trees.
type Project struct {
	Name      string       `json:"project"`
	State     string       `json:"state"`
	CreatedAt time.Time    `json:"created_at"`
	Backend   Backend      `json:"backend"`
	Trees     []TreeStatus `json:"trees"`
	// Warnings, after Add or Set, name the limits just given that the
	// trees already pass. Not part of the JSON (yet): each shell says them
	// beside the answer.
	Warnings []LimitWarning `json:"-"`
}

// TreeStatus is one tree's limits and usage as the backend reports them.
type TreeStatus struct {
	Project    string          `json:"project"`
	Area       string          `json:"area"`
	Path       string          `json:"path"`
	ProjectID  quota.ProjectID `json:"project_id"`
	Backend    Backend         `json:"backend,omitzero"` // absent where an answer gives it once (BackendOnce)
	UsedBytes  uint64          `json:"used_bytes"`
	UsedInodes uint64          `json:"used_inodes"`
	BytesSoft  uint64          `json:"bytes_soft"`
	BytesHard  uint64          `json:"bytes_hard"`
	InodesSoft uint64          `json:"inodes_soft"`
	InodesHard uint64          `json:"inodes_hard"`
	Percent    float64         `json:"percent"` // of the byte hard limit; 0 when there is none
	// BytesGraceEnds and InodesGraceEnds are set while usage is over a
	// soft limit: when its grace (soft_grace) runs out, after which
	// admission denies (on XFS the kernel's timer, which also refuses
	// writes then; on the fallback xfsq's, started when xfsq saw the tree
	// go over: at a write through it, a walk or a limit change).
	BytesGraceEnds  *time.Time `json:"bytes_grace_ends_at,omitempty"`
	InodesGraceEnds *time.Time `json:"inodes_grace_ends_at,omitempty"`
	// Drift is set when the limits in force differ from the recorded ones
	// (changed behind xfsq's back): doctor --fix restores the recorded ones.
	Drift string `json:"drift,omitempty"`
	// From snapshots: change of allocated bytes over 24 h and 7 d (null
	// until that much history exists) and the newest mtime in the tree.
	Growth24h      *int64     `json:"growth_24h_bytes"`
	Growth7d       *int64     `json:"growth_7d_bytes"`
	LastActivityAt *time.Time `json:"last_activity_at"`
	// UsageAsOf, on the fallback only, is when the walk the usage starts
	// from began: writes made through xfsq since are counted, others not.
	UsageAsOf *time.Time `json:"usage_walked_at,omitempty"`
	// UsageAgeSeconds (fallback only) is how old UsageAsOf was when read;
	// Stale marks a figure whose walk is older than SnapshotInterval (or
	// that was never walked): the hourly pass has not run, and writes made
	// outside xfsq since are missing from it.
	UsageAgeSeconds *float64 `json:"usage_age_seconds,omitempty"`
	Stale           bool     `json:"stale,omitempty"`
	// WalkBytes and Escape are set on XFS when the last walk and the
	// kernel's count disagreed by more than 1 %: a sign of a quota escape.
	WalkBytes *uint64 `json:"walk_bytes,omitempty"`
	Escape    string  `json:"escape,omitempty"`
	// FullInSeconds is how long until the tree reaches its hard byte limit
	// at its trend (package trend; 0: it has), absent when it is not filling or
	// too little is known; ReclaimableBytes what the sweep policies would
	// free in it now, as its last plan found, absent until one was made.
	// Both are filled by Report and ProjectStorage only.
	FullInSeconds    *float64 `json:"full_in_seconds,omitempty"`
	ReclaimableBytes *uint64  `json:"reclaimable_bytes,omitempty"`
	// fullWithin is how little room left counts as none: on ext4 the
	// kernel reserves a page for each page a write dirties, so a tree
	// with less than a page below its hard limit takes no more data (it
	// stops writes up to a page short of the limit).
	fullWithin uint64
}

// FullWithin is how little room left counts as none (see StatusOf).
func (t *TreeStatus) FullWithin() uint64 { return t.fullWithin }

// Read says how fresh a read's figures must be. The zero value is what
// every read gets unless its caller asks for more: on XFS the kernel's
// counters, on the fallback each tree's last walk plus the writes made
// through xfsq since (UsageAsOf says when that walk began) — never a walk,
// never a write, so that a read of a big root, or a check before each run,
// stays cheap. The hourly pass (snapshot --all) and xfsq's own writes keep
// those figures current.
type Read struct {
	// Refresh walks each fallback tree now, and records the walk, before
	// reading it: for a caller that needs writes made outside xfsq counted.
	Refresh bool
}

// ReadOf is the optional Read of a call, the zero value when none.
func ReadOf(rs []Read) Read {
	if len(rs) > 0 {
		return rs[0]
	}
	return Read{}
}

// SnapshotInterval is how often the scheduled pass (snapshot --all) walks
// every tree: on the fallback a figure from an older walk is stale.
const SnapshotInterval = time.Hour

// Freshness is how old a fallback figure whose walk began at walked is at
// now, and whether that is past the snapshot interval (or unknown: never
// walked). It is computed at every read, kept answers too (the core's readcache.go).
func Freshness(walked, now time.Time) (age *float64, stale bool) {
	if walked.IsZero() {
		return nil, true
	}
	a := max(now.Sub(walked), 0).Seconds()
	return &a, now.Sub(walked) > SnapshotInterval
}

// ApplyGrace sets q's grace ends from the timers, while q is still over
// each soft limit.
func ApplyGrace(q *quota.Quota, bytesSince, inodesSince time.Time, grace time.Duration) {
	if q.BytesSoft > 0 && q.Bytes > q.BytesSoft && !bytesSince.IsZero() {
		q.BytesGraceEnds = quota.InstantOf(bytesSince.Add(grace))
	}
	if q.InodesSoft > 0 && q.Inodes > q.InodesSoft && !inodesSince.IsZero() {
		q.InodesGraceEnds = quota.InstantOf(inodesSince.Add(grace))
	}
}

// Recorded is what the store records of a tree that its figures show:
// whose and which it is, its ID and the limits recorded for it.
type Recorded struct {
	Project, Area, Path string
	ProjectID           quota.ProjectID
	Limits              quota.Limits
}

// StatusOf is one recorded tree with the usage and limits q in force, as
// backend b reports them; fullWithin is how little room left counts as
// none (a page on ext4, else 0: see TreeStatus).
func StatusOf(t Recorded, q quota.Quota, asOf *time.Time, b Backend, fullWithin uint64) TreeStatus {
	s := TreeStatus{UsageAsOf: asOf, Project: t.Project, Area: t.Area, Path: t.Path, ProjectID: t.ProjectID, Backend: b,
		UsedBytes: q.Bytes, UsedInodes: q.Inodes,
		BytesSoft: q.BytesSoft, BytesHard: q.BytesHard, InodesSoft: q.InodesSoft, InodesHard: q.InodesHard}
	if q.BytesHard > 0 {
		s.Percent = float64(q.Bytes) * 100 / float64(q.BytesHard)
	}
	if !q.BytesGraceEnds.IsZero() {
		t := q.BytesGraceEnds.Time()
		s.BytesGraceEnds = &t
	}
	if !q.InodesGraceEnds.IsZero() {
		t := q.InodesGraceEnds.Time()
		s.InodesGraceEnds = &t
	}
	if q.Limits != t.Limits {
		s.Drift = fmt.Sprintf("limits in force %s differ from the recorded %s", FormatLimits(q.Limits), FormatLimits(t.Limits))
	}
	s.fullWithin = fullWithin
	return s
}

// Backend is the backend object of docs/design/README.md#output-conventions, as every JSON output gives it:
// which backend is in force, whether the kernel enforces the limits, and
// on the fallback why (in full, with the fix). Text shows its String.
type Backend struct {
	Kind     string `json:"kind"` // BackendXFS, BackendExt4 or BackendFallback
	Enforced bool   `json:"enforced"`
	Reason   string `json:"reason,omitempty"`
	name     string
	encoded  *backendJSON // its JSON, made once (withJSON); nil: none
}

// String is the one-line form text outputs show: "xfs", "ext4" or "fallback (SHORT)".
func (b Backend) String() string { return b.name }

// Backend kinds, and the choice init takes (--backend).
const (
	BackendXFS      = "xfs"
	BackendExt4     = "ext4"
	BackendFallback = "fallback"
	BackendAuto     = "auto"
)

// NewBackend is the backend object of a backend of kind, its one-line
// form name, its JSON made once.
func NewBackend(kind string, enforced bool, reason, name string) Backend {
	return Backend{Kind: kind, Enforced: enforced, Reason: reason, name: name}.withJSON()
}

// KeptJSON is b with its JSON kept beside it (for tests of the kept JSON).
func KeptJSON(b Backend) Backend { return b.withJSON() }

// IsZero is a Backend never filled in: a tree of an answer that gives the
// backend once, at its top (BackendOnce), carries none.
func (b Backend) IsZero() bool { return b.Kind == "" && !b.Enforced && b.Reason == "" }

// TreesWithoutBackend is a copy of trees without their backend: the
// fallback's reason is a paragraph, and an answer repeated it per tree.
func TreesWithoutBackend(trees []TreeStatus) []TreeStatus {
	if trees == nil {
		return nil
	}
	out := slices.Clone(trees)
	for i := range out {
		out[i].Backend = Backend{}
	}
	return out
}

// BackendOnce is p with the backend at its top only, as the API answers.
func (p Project) BackendOnce() Project { p.Trees = TreesWithoutBackend(p.Trees); return p }

// LimitWarning says that a tree already holds at or over a limit it was
// just given (a hard limit of 8k on a 16 KiB tree: even the empty
// skeleton's directories count). The change stands, but writes are
// refused (hard) or warned about (soft) until the tree shrinks; each shell
// words it.
type LimitWarning struct {
	Project  string `json:"project"`
	Area     string `json:"area"`
	Resource string `json:"resource"` // "bytes" or "inodes"
	Kind     string `json:"kind"`     // "hard" or "soft"
	Used     uint64 `json:"used"`
	Limit    uint64 `json:"limit"`
}

// Limit kinds and resources a LimitWarning names.
const (
	LimitHard   = "hard"
	LimitSoft   = "soft"
	LimitBytes  = "bytes"
	LimitInodes = "inodes"
)

// OverLimits is what p's trees already hold at or over: a tree past its
// hard limit is not warned about its soft one as well.
func OverLimits(p Project) []LimitWarning {
	var out []LimitWarning
	for _, t := range p.Trees {
		over := func(resource, kind string, used, limit uint64) {
			if limit > 0 && used >= limit {
				out = append(out, LimitWarning{Project: p.Name, Area: t.Area, Resource: resource, Kind: kind, Used: used, Limit: limit})
			}
		}
		over(LimitBytes, LimitHard, t.UsedBytes, t.BytesHard)
		over(LimitInodes, LimitHard, t.UsedInodes, t.InodesHard)
		if t.BytesHard == 0 || t.UsedBytes < t.BytesHard {
			over(LimitBytes, LimitSoft, t.UsedBytes, t.BytesSoft)
		}
		if t.InodesHard == 0 || t.UsedInodes < t.InodesHard {
			over(LimitInodes, LimitSoft, t.UsedInodes, t.InodesSoft)
		}
	}
	return out
}

// backendJSON is a Backend's JSON and what it was made of: every answer
// carries the backend up to four times, and the fallback's reason is a
// paragraph.
type backendJSON struct {
	kind, reason string
	enforced     bool
	json         []byte
}

// withJSON is k with its JSON kept beside it.
func (k Backend) withJSON() Backend {
	k.encoded = nil
	k.encoded = &backendJSON{kind: k.Kind, reason: k.Reason, enforced: k.Enforced, json: k.appendJSON(nil)}
	return k
}

// AppendBackendJSON appends k's JSON, as encoding/json writes it, from
// the JSON kept beside it while its fields are what it was made of.
func AppendBackendJSON(b []byte, k Backend) []byte { return k.appendJSON(b) }

func (k Backend) appendJSON(b []byte) []byte {
	// Kept JSON only while the fields are what it was made of: a copy
	// whose fields were changed is encoded afresh.
	if e := k.encoded; e != nil && e.kind == k.Kind && e.enforced == k.Enforced && e.reason == k.Reason {
		return append(b, e.json...)
	}
	b = append(b, `{"kind":`...)
	b = appendJSONString(b, k.Kind)
	b = append(b, `,"enforced":`...)
	b = strconv.AppendBool(b, k.Enforced)
	if k.Reason != "" {
		b = append(b, `,"reason":`...)
		b = appendJSONString(b, k.Reason)
	}
	return append(b, '}')
}

// appendJSONString quotes s as encoding/json does without HTML escaping
// (an admission message always holds the project's name in quotes).
func appendJSONString(b []byte, s string) []byte { return jsonfmt.AppendString(b, s) }

// Exceeded reports whether a tree is at or over a hard limit, or over a
// soft one past its grace, at now: what makes Check deny a run.
func Exceeded(t TreeStatus, now time.Time) bool { return verdictOf(t, now).denies() }

// FormatLimits words limits as doctor's and report's drift findings do.
func FormatLimits(l quota.Limits) string {
	return fmt.Sprintf("{bytes soft %s hard %s, inodes soft %d hard %d}",
		units.FormatIEC(l.BytesSoft), units.FormatIEC(l.BytesHard), l.InodesSoft, l.InodesHard)
}

// Admission decisions.
const (
	Ok   = "ok"
	Warn = "warn"
	Deny = "deny"
)

// Judge is a tree's admission decision (Ok, Warn or Deny) and its words.
func Judge(t TreeStatus, now time.Time) (decision, msg string) {
	switch verdictOf(t, now) {
	case overBytesHard:
		return Deny, fmt.Sprintf("disk quota exceeded (%s of %s)", units.FormatIEC(t.UsedBytes), units.FormatIEC(t.BytesHard))
	case overInodesHard:
		return Deny, fmt.Sprintf("file count quota exceeded (%d of %d files)", t.UsedInodes, t.InodesHard)
	case bytesGraceOver:
		return Deny, fmt.Sprintf("disk quota exceeded: over the soft limit past its grace (%s of %s soft, grace ended %s)",
			units.FormatIEC(t.UsedBytes), units.FormatIEC(t.BytesSoft), t.BytesGraceEnds.UTC().Format(time.RFC3339))
	case inodesGraceOver:
		return Deny, fmt.Sprintf("file count quota exceeded: over the soft limit past its grace (%d of %d files soft, grace ended %s)",
			t.UsedInodes, t.InodesSoft, t.InodesGraceEnds.UTC().Format(time.RFC3339))
	case overBytesSoft:
		return Warn, fmt.Sprintf("over the soft disk limit (%s of %s)%s", units.FormatIEC(t.UsedBytes), units.FormatIEC(t.BytesSoft), graceNote(t.BytesGraceEnds))
	case overInodesSoft:
		return Warn, fmt.Sprintf("over the soft file count limit (%d of %d files)%s", t.UsedInodes, t.InodesSoft, graceNote(t.InodesGraceEnds))
	}
	// The common answer is concatenated, not Sprintf'd: asked before every run.
	if t.BytesHard > 0 {
		return Ok, "ok (" + units.FormatIEC(t.UsedBytes) + " of " + units.FormatIEC(t.BytesHard) + ")"
	}
	return Ok, "ok (" + units.FormatIEC(t.UsedBytes) + ", no hard limit)"
}

// A tree's standing against its limits, worst first: Judge words it,
// Exceeded (a scrape, 3,000 trees at a time) only asks whether it denies.
type verdict int

const (
	withinLimits verdict = iota
	overBytesHard
	overInodesHard
	bytesGraceOver
	inodesGraceOver
	overBytesSoft
	overInodesSoft
)

func (v verdict) denies() bool { return v >= overBytesHard && v <= inodesGraceOver }

// rank orders the decisions: ok 0, warn 1, deny 2.
func (v verdict) rank() int {
	switch {
	case v.denies():
		return 2
	case v == withinLimits:
		return 0
	}
	return 1
}

func verdictOf(t TreeStatus, now time.Time) verdict {
	switch {
	case t.BytesHard > 0 && (t.UsedBytes >= t.BytesHard || t.BytesHard-t.UsedBytes < t.fullWithin):
		return overBytesHard
	case t.InodesHard > 0 && t.UsedInodes >= t.InodesHard:
		return overInodesHard
	case t.BytesSoft > 0 && t.UsedBytes > t.BytesSoft && t.BytesGraceEnds != nil && !now.Before(*t.BytesGraceEnds):
		return bytesGraceOver
	case t.InodesSoft > 0 && t.UsedInodes > t.InodesSoft && t.InodesGraceEnds != nil && !now.Before(*t.InodesGraceEnds):
		return inodesGraceOver
	case t.BytesSoft > 0 && t.UsedBytes > t.BytesSoft:
		return overBytesSoft
	case t.InodesSoft > 0 && t.UsedInodes > t.InodesSoft:
		return overInodesSoft
	}
	return withinLimits
}

func graceNote(ends *time.Time) string {
	if ends == nil {
		return ""
	}
	return ", grace ends " + ends.UTC().Format(time.RFC3339)
}

// AdmissionRank is how a tree's standing against its limits decides a
// run: ok 0, warn 1, deny 2.
func AdmissionRank(t TreeStatus, now time.Time) int { return verdictOf(t, now).rank() }
