package core

import (
	"context"
	"time"

	"github.com/xfsq/xfsq/quota"
	"github.com/xfsq/xfsq/sandbox/internal/core/figures"
	"github.com/xfsq/xfsq/store"
	"github.com/xfsq/xfsq/sweep"
)

// Every tree's figures are read beneath the core (sandbox/internal/core/usage,
// m.figs) with the read cache they share and the crossings a reader notes;
// the core answers for them here, and is the Source they ask for the rest.

// Show returns one project with its trees' usage and limits, as fresh as
// the optional Read asks.
func (m *Manager) Show(ctx context.Context, name string, r ...Read) (Project, error) {
	if err := ValidateName(name); err != nil {
		return Project{}, err
	}
	return m.figs.Show(ctx, name, figures.ReadOf(r))
}

// show is Show of a name already checked; RootOwner too (its inbound tree),
// for the changes that return what they changed.
func (m *Manager) show(ctx context.Context, name string, read Read) (Project, error) {
	return m.figs.Show(ctx, name, read)
}

// Report returns every tree of every project: on XFS from one enumeration
// of the kernel's counters; on the fallback as Read says. Never nil.
func (m *Manager) Report(ctx context.Context, r ...Read) ([]TreeStatus, error) {
	return m.figs.Report(ctx, figures.ReadOf(r))
}

// Usage is Report's usage and limits without the snapshot-derived fields,
// kept between calls: see usage.Reads.Usage. Never nil.
func (m *Manager) Usage(ctx context.Context) ([]TreeStatus, error) { return m.figs.Usage(ctx) }

// SweepUsage reads fresh figures of the trees of names for a sweep's quota
// check (usage.Reads.SweepUsage); a project whose figures cannot be had is
// in unmeasured, with why.
func (m *Manager) SweepUsage(ctx context.Context, names []string) (usage map[string]TreeStatus, unmeasured map[string]string, err error) {
	return m.figs.SweepUsage(ctx, names)
}

// NoteSweepOverSoft records the trees a sweep's quota check found over
// their soft byte limits.
func (m *Manager) NoteSweepOverSoft(ctx context.Context, overs []sweep.OverSoft, sweepID string) error {
	return m.figs.NoteSweepOverSoft(ctx, overs, sweepID)
}

// status joins recorded trees with their usage and limits (usage.Reads.Status).
func (m *Manager) status(ctx context.Context, trees []store.Tree, all []quota.Quota, r Read) ([]TreeStatus, error) {
	return m.figs.Status(ctx, trees, all, r)
}

// noteLimits journals the limits rows show reached or left, as seenBy saw them.
func (m *Manager) noteLimits(ctx context.Context, rows []TreeStatus, seenBy string) error {
	return m.figs.NoteLimits(ctx, rows, seenBy)
}

// noteWalked records the crossings of trees just walked (of area, "" for all).
func (m *Manager) noteWalked(ctx context.Context, trees []store.Tree, area string) error {
	return m.figs.NoteWalked(ctx, trees, area)
}

// changeMark is the store's change mark, kept while its generation stands.
func (m *Manager) changeMark(ctx context.Context) (store.ChangeMark, error) {
	return m.figs.ChangeMark(ctx)
}

// What the reads ask of the core (usage.Source) that it does not export
// for other callers.

// ProjectNotFound refuses a project the store does not know.
func (m *Manager) ProjectNotFound(name string) error { return notFound(name) }

// FallbackQuota walks a fallback tree whose baseline is older than maxAge
// (0: always) and reads it.
func (m *Manager) FallbackQuota(ctx context.Context, t store.Tree, maxAge time.Duration) (quota.Quota, time.Time, error) {
	return m.fallbackQuota(ctx, t, maxAge)
}

// GrowthAndActivity fills rows' growth and last activity from the
// snapshots (usage.Reads.GrowthAndActivity).
func (m *Manager) GrowthAndActivity(ctx context.Context, rows []TreeStatus) error {
	return m.figs.GrowthAndActivity(ctx, rows)
}

// Insight fills rows' full-in estimate and reclaimable bytes.
func (m *Manager) Insight(ctx context.Context, rows []TreeStatus) error { return m.insight(ctx, rows) }

// MeasureTree walks the fallback tree t for its baseline, walk's writes in
// flight counted as its own.
func (m *Manager) MeasureTree(t store.Tree, walk store.Walk) (quota.Usage, store.WalkSeen, error) {
	return m.measureTree(t, inProgress(walk))
}
