package core

import (
	"context"
	"time"

	"github.com/xfsq/xfsq/internal/deletion"
	"github.com/xfsq/xfsq/internal/saferm"
	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/quota"
	"github.com/xfsq/xfsq/quota/xfs"
	"github.com/xfsq/xfsq/sandbox/internal/core/figures"
	"github.com/xfsq/xfsq/sandbox/internal/core/trend"
	"github.com/xfsq/xfsq/sandbox/internal/core/usage"
	"github.com/xfsq/xfsq/store"
)

// What the use cases beside the core (sandbox/internal/retention, doctor,
// readmodel) call that the core keeps to itself otherwise. Go's internal
// rule keeps shells from reaching any of it; each use case names the part
// it needs as an interface of its own, so that what it may do is written
// down where it is done. (writes, the accounting of writes, calls nothing
// from here: what writes.Core names the core exports for its own callers
// too, the credit of a removal in credit.go among it.)

// Now is the core's clock.
func (m *Manager) Now() time.Time { return m.now() }

// ClaimFor is ctx's operation claiming a lock or a pass.
func (m *Manager) ClaimFor(ctx context.Context) store.Claim { return m.claimFor(ctx) }

// HolderLive reports whether the operation h names may still be under way.
func (m *Manager) HolderLive(ctx context.Context, h string) bool { return m.holderLive(ctx, h) }

// InboundTree reads the inbound tree's row, if the root has one.
func (m *Manager) InboundTree(ctx context.Context) (store.Tree, bool, error) {
	return m.inboundTree(ctx)
}

// JournalEviction appends one storage.evicted record.
func (m *Manager) JournalEviction(ctx context.Context, project string, rec deletion.Record) error {
	return m.journalEviction(ctx, project, rec)
}

// Status joins recorded trees with their usage and limits (see status).
func (m *Manager) Status(ctx context.Context, trees []store.Tree, all []quota.Quota, r Read) ([]TreeStatus, error) {
	return m.status(ctx, trees, all, r)
}

// StatusOfReads is Status of fallback trees already read (reads[i] of
// trees[i], as Store.Read reads them), grace being soft_grace.
func (m *Manager) StatusOfReads(trees []store.Tree, reads []store.TreeRead, grace time.Duration) []TreeStatus {
	return m.figs.StatusOfReads(trees, reads, grace)
}

// ---- doctor (sandbox/internal/doctor, doctor.Core) ----
// Doctor reads the kernel's IDs, limits and grace beside the store's
// records and repairs drift through the core's own operations; these are
// the parts of them it calls.

// Kernel is the kernel's quota interface, nil on the fallback.
func (m *Manager) Kernel() *xfs.FS { return m.xfs }

// HandNamed is the set of IDs named in the project files (/etc/projid,
// /etc/projects): never xfsq's. Only on the kernel backend.
func (m *Manager) HandNamed() (map[quota.ProjectID]bool, error) { return m.alloc.HandNamed() }

// FSUUID keys this root's filesystem in the ID registry.
func (m *Manager) FSUUID() string { return m.fsUUID }

// IDRange is the range of project IDs xfsq hands out on this root.
func (m *Manager) IDRange() xfs.IDRange { return m.Range }

// ApplyGrace gives the kernel soft_grace as its grace periods.
func (m *Manager) ApplyGrace(ctx context.Context) error { return m.applyGrace(ctx) }

// AddMissingTree gives a ready project its tree of area, or leaves no trace.
func (m *Manager) AddMissingTree(ctx context.Context, name, area string) error {
	return m.addMissingTree(ctx, name, area)
}

// ApplyInboundQuota gives the inbound tree default_inbound_quota's new
// limit, as project set would (settingwrites, when the setting changes).
func (m *Manager) ApplyInboundQuota(ctx context.Context, bytesHard uint64) error {
	return m.applyInboundQuota(ctx, bytesHard)
}

// MakeInboundTree records the root's row and gives inbound/ its tree.
func (m *Manager) MakeInboundTree(ctx context.Context) error { return m.makeInboundTree(ctx) }

// Orphaned reports whether a pending deletion's writer is gone.
func (m *Manager) Orphaned(ctx context.Context, p store.PendingEviction) bool {
	return m.orphaned(ctx, p)
}

// Settle journals the outcome of an orphaned pending deletion.
func (m *Manager) Settle(ctx context.Context, root *saferm.Dir, p store.PendingEviction) error {
	return m.settle(ctx, root, p)
}

// RemoveTemp removes, journalled, the temporary file name in parent if it
// is one (see removeTemp).
func (m *Manager) RemoveTemp(ctx context.Context, parent *saferm.Dir, project, area, name, reason, policy string) error {
	return m.removeTemp(ctx, parent, project, area, name, reason, policy)
}

// DefaultQuotaSetting names the setting that gives a new tree of area its
// hard byte limit.
func DefaultQuotaSetting(area string) string { return areaDefaultQuota[area] }

// InboundOf finds the root's inbound tree among trees.
func InboundOf(trees []store.Tree) (store.Tree, bool) { return inboundOf(trees) }

// FormatLimits words limits as doctor's and report's drift findings do.
func FormatLimits(l quota.Limits) string { return figures.FormatLimits(l) }

// WalkDisagrees reports whether a snapshot's walk and the kernel's count
// differ (usage.WalkDisagrees): the sign of a quota escape.
func WalkDisagrees(s store.Snapshot) bool { return usage.WalkDisagrees(s) }

// ---- end doctor ----
// RegisteredIDs are the ID registry's records of the root's filesystem.
func (m *Manager) RegisteredIDs(ctx context.Context) ([]store.IDRecord, error) {
	return m.Store.IDs(ctx, m.fsUUID)
}

// TreesWithoutBackend is a copy of trees without their backend, for an
// answer that gives it once, at its top.
func TreesWithoutBackend(trees []TreeStatus) []TreeStatus { return figures.TreesWithoutBackend(trees) }

// ChangeMark is the store's change mark, kept while its generation stands
// (changeMark).
func (m *Manager) ChangeMark(ctx context.Context) (store.ChangeMark, error) { return m.changeMark(ctx) }

// DiskTrend fits the disk's use at each scheduled pass and now against
// its size (diskTrend).
func (m *Manager) DiskTrend(ctx context.Context, total, free uint64, now time.Time) (trend.Trend, error) {
	return m.diskTrend(ctx, total, free, now)
}

// UnsupportedReason is why the kernel backend could not be used, on the
// fallback (ok false on a kernel backend, or a fallback chosen at init).
func (m *Manager) UnsupportedReason() (reason string, ok bool) {
	if m.Unsupported == nil {
		return "", false
	}
	return m.Unsupported.Reason, true
}

// AdmissionRank is how a tree's standing against its limits decides a
// run: ok 0, warn 1, deny 2.
func AdmissionRank(t TreeStatus, now time.Time) int { return figures.AdmissionRank(t, now) }

// Judge is a tree's admission decision (Ok, Warn or Deny) and its words.
func Judge(t TreeStatus, now time.Time) (decision, msg string) { return figures.Judge(t, now) }

// NoteLimits journals the limits rows show reached or left, as seenBy
// saw them (noteLimits).
func (m *Manager) NoteLimits(ctx context.Context, rows []TreeStatus, seenBy string) error {
	return m.noteLimits(ctx, rows, seenBy)
}

// ---- healthsources (sandbox/internal/healthsources) ----
// Health opens a root's store on its own; these name and check it as
// OpenRoot does.

// CheckStoreExists refuses a SQLite store named explicitly that is not
// there (checkStoreExists).
func CheckStoreExists(dsn string) error { return checkStoreExists(dsn) }

// StoreDSN is the store c names for the root at root (its own when
// c.DSN is empty).
func StoreDSN(c Config, root string) string { return c.dsn(root) }

// HostOf is the host name c gives, or this host's.
func HostOf(c Config) string { return c.host() }

// ---- snapshots (sandbox/internal/snapshots, snapshots.Core) ----

// NoteWalked records the crossings of trees just walked (of area, "" for
// all).
func (m *Manager) NoteWalked(ctx context.Context, trees []store.Tree, area string) error {
	return m.noteWalked(ctx, trees, area)
}

// NoInboundTree refuses a walk of the inbound tree of a root initialised
// before it had one, with the doctor as its repair.
func NoInboundTree() error { return errNoInboundTree() }

// ---- lifecycle (sandbox/internal/lifecycle, lifecycle.Core) ----
// Project add and rm make and remove trees with the core's own tree-making
// (trees.go, which init's inbound tree and doctor's repair use too); these
// are the parts of the core they call beside it.

// OverLimits is what p's trees already hold at or over (figures.OverLimits).
func OverLimits(p Project) []LimitWarning { return figures.OverLimits(p) }

// NotFound refuses a project the store does not know, with its hint.
func NotFound(name string) error { return notFound(name) }

// LimitsPayload is limits as the journal records them.
func LimitsPayload(l quota.Limits) journal.Limits { return limitsPayload(l) }

// ProjectNotReady refuses a project half-added or half-removed, with the
// doctor as its repair.
func ProjectNotReady(name, state string) error { return notReady(name, state, runDoctor) }
