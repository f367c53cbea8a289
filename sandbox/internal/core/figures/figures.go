// Package figures is the vocabulary of a tree's figures and the rules that
// judge them, beneath the core: what a project and each of its trees show
// (Project, TreeStatus, with the backend object every answer carries), how
// fresh a read must be (Read) and how old a fallback figure is, the grace
// a soft limit runs on, and admission's rule (Judge, Exceeded) with the
// warnings a limit change gives (OverLimits).
//
// A tree's figures and the backend object are the wire's types (api/v1),
// declared there once; a project is not, since it carries the warnings of
// a limit change beside its JSON.
//
// It is a leaf the core, the use cases beside it and the facade all speak:
// pure functions of their arguments. It must never read the store, the
// kernel or a tree, and never import the core, a use case or a shell.
package figures

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	apiv1 "github.com/xfsq/xfsq/api/v1"
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

// TreeStatus is one tree's limits and usage as the backend reports them:
// the wire's (api/v1), declared there once. While usage is over a soft
// limit, BytesGraceEndsAt and InodesGraceEndsAt say when its grace
// (soft_grace) runs out, after which admission denies (on XFS the
// kernel's timer, which also refuses writes then; on the fallback xfsq's,
// started when xfsq saw the tree go over: at a write through it, a walk or
// a limit change). Drift is set when the limits in force differ from the
// recorded ones (doctor --fix restores them). Growth and last activity are
// from the snapshots (null until that much history exists); on the
// fallback UsageWalkedAt is when the walk the usage starts from began
// (writes through xfsq since are counted, others not), and Stale marks a
// figure whose walk is older than SnapshotInterval. WalkBytes and Escape
// (XFS) say the last walk and the kernel's count disagreed by over 1 %.
// FullInSeconds and ReclaimableBytes are filled by Report and
// ProjectStorage only. The backend is absent where an answer gives it
// once (BackendOnce).
type TreeStatus = apiv1.TreeStatus

// Read says how fresh a read's figures must be. The zero value is what
// every read gets unless its caller asks for more: on XFS the kernel's
// counters, on the fallback each tree's last walk plus the writes made
// through xfsq since (UsageWalkedAt says when that walk began) — never a walk,
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
// backend b reports them.
func StatusOf(t Recorded, q quota.Quota, asOf *time.Time, b Backend) TreeStatus {
	s := TreeStatus{UsageWalkedAt: asOf, Project: t.Project, Area: t.Area, Path: t.Path, ProjectID: uint32(t.ProjectID), Backend: b,
		UsedBytes: q.Bytes, UsedInodes: q.Inodes,
		BytesSoft: q.BytesSoft, BytesHard: q.BytesHard, InodesSoft: q.InodesSoft, InodesHard: q.InodesHard}
	if q.BytesHard > 0 {
		s.Percent = float64(q.Bytes) * 100 / float64(q.BytesHard)
	}
	if !q.BytesGraceEnds.IsZero() {
		t := q.BytesGraceEnds.Time()
		s.BytesGraceEndsAt = &t
	}
	if !q.InodesGraceEnds.IsZero() {
		t := q.InodesGraceEnds.Time()
		s.InodesGraceEndsAt = &t
	}
	if q.Limits != t.Limits {
		s.Drift = fmt.Sprintf("limits in force %s differ from the recorded %s", FormatLimits(q.Limits), FormatLimits(t.Limits))
	}
	return s
}

// Backend is the backend object of docs/design/README.md#output-conventions, as every JSON output gives it:
// which backend is in force, whether the kernel enforces the limits, and
// on the fallback why (in full, with the fix): the wire's (api/v1). Text
// outputs show the backend's one-line name instead (the core's
// BackendName: "xfs", "ext4" or "fallback (SHORT)").
type Backend = apiv1.Backend

// FullWithin is how little room left below a hard byte limit counts as
// none in a tree of backend b: on ext4 the kernel reserves a page for each
// page a write dirties, so a tree with less than a page below its hard
// limit takes no more data (it stops writes up to a page short of the
// limit); elsewhere 0. A tree judged carries its backend (a copy without
// it, TreesWithoutBackend, is for an answer's JSON only).
func FullWithin(b Backend) uint64 {
	if b.Kind == BackendExt4 {
		return pageSize
	}
	return 0
}

// pageSize is the unit of ext4's delayed-allocation reservations.
var pageSize = uint64(os.Getpagesize())

// Backend kinds, and the choice init takes (--backend).
const (
	BackendXFS      = "xfs"
	BackendExt4     = "ext4"
	BackendFallback = "fallback"
	BackendAuto     = "auto"
)

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

// backendJSON is a Backend's JSON and the Backend it is of: every answer
// carries the backend up to four times, and the fallback's reason is a
// paragraph. The last one encoded is kept (keptBackend): a root answers
// with one backend.
type backendJSON struct {
	of   Backend
	json []byte
}

var keptBackend atomic.Pointer[backendJSON]

// AppendBackendJSON appends k's JSON, as encoding/json writes it, from
// the JSON kept of the last backend encoded while k is that backend.
func AppendBackendJSON(b []byte, k Backend) []byte {
	if e := keptBackend.Load(); e != nil && e.of == k {
		return append(b, e.json...)
	}
	e := &backendJSON{of: k, json: appendBackendJSON(nil, k)}
	keptBackend.Store(e)
	return append(b, e.json...)
}

func appendBackendJSON(b []byte, k Backend) []byte {
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
			units.FormatIEC(t.UsedBytes), units.FormatIEC(t.BytesSoft), t.BytesGraceEndsAt.UTC().Format(time.RFC3339))
	case inodesGraceOver:
		return Deny, fmt.Sprintf("file count quota exceeded: over the soft limit past its grace (%d of %d files soft, grace ended %s)",
			t.UsedInodes, t.InodesSoft, t.InodesGraceEndsAt.UTC().Format(time.RFC3339))
	case overBytesSoft:
		return Warn, fmt.Sprintf("over the soft disk limit (%s of %s)%s", units.FormatIEC(t.UsedBytes), units.FormatIEC(t.BytesSoft), graceNote(t.BytesGraceEndsAt))
	case overInodesSoft:
		return Warn, fmt.Sprintf("over the soft file count limit (%d of %d files)%s", t.UsedInodes, t.InodesSoft, graceNote(t.InodesGraceEndsAt))
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
	case t.BytesHard > 0 && (t.UsedBytes >= t.BytesHard || t.BytesHard-t.UsedBytes < FullWithin(t.Backend)):
		return overBytesHard
	case t.InodesHard > 0 && t.UsedInodes >= t.InodesHard:
		return overInodesHard
	case t.BytesSoft > 0 && t.UsedBytes > t.BytesSoft && t.BytesGraceEndsAt != nil && !now.Before(*t.BytesGraceEndsAt):
		return bytesGraceOver
	case t.InodesSoft > 0 && t.UsedInodes > t.InodesSoft && t.InodesGraceEndsAt != nil && !now.Before(*t.InodesGraceEndsAt):
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
