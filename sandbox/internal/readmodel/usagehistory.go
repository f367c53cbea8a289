package readmodel

import (
	"context"
	"fmt"
	"time"

	apiv1 "github.com/xfsq/xfsq/api/v1"
	"github.com/xfsq/xfsq/store"
)

// A project's and the disk's usage over the snapshot window, from the
// stored snapshot totals (never a walk): what the dashboard's charts draw,
// with each tree's limits now to draw as lines. A project's history is one
// statement for all its trees, the disk's one over the scheduled passes'
// records. Long windows are thinned to at most HistoryOptions.Points
// points a series, each the highest of its span of time: a chart of usage
// against a limit must not hide the peak that came nearest to it.

// DefaultHistoryPoints is how many points a series holds at most by
// default: one an hour over 30 days, a chart's width in pixels.
const DefaultHistoryPoints = 720

// MaxHistoryPoints bounds HistoryOptions.Points.
const MaxHistoryPoints = 10000

// HistoryOptions choose the window and how finely it is drawn.
type HistoryOptions struct {
	Since  time.Duration // how far back from now; 0: the snapshot_retention setting (the whole window kept)
	Points int           // at most this many points a series; 0: DefaultHistoryPoints
}

// The answers are the wire's (api/v1), which the server encodes as they
// are: ProjectHistory (GET …/projects/{id}/history) and DiskHistory (GET
// /v1/workspace/storage/history).
type (
	HistoryPoint   = apiv1.HistoryPoint
	TreeHistory    = apiv1.TreeHistory
	ProjectHistory = apiv1.ProjectHistory
	DiskHistory    = apiv1.DiskHistory
)

// checkHistory fills o's defaults and refuses what is out of range.
func (m *Model) checkHistory(ctx context.Context, o HistoryOptions) (HistoryOptions, error) {
	switch {
	case o.Since < 0:
		return o, fieldErrorf("since", "%s: use a positive duration such as 24h or 7d", o.Since)
	case o.Points < 0 || o.Points > MaxHistoryPoints:
		return o, fieldErrorf("points", "%d: use 2 to %d", o.Points, MaxHistoryPoints)
	case o.Points == 1:
		return o, fieldErrorf("points", "1: a line needs 2 to %d", MaxHistoryPoints)
	}
	if o.Points == 0 {
		o.Points = DefaultHistoryPoints
	}
	if o.Since == 0 {
		v, err := m.Setting(ctx, "snapshot_retention")
		if err != nil {
			return o, fmt.Errorf("read snapshot_retention: %w", err)
		}
		o.Since = v.Duration()
	}
	return o, nil
}

// ProjectHistory reads each of a project's trees' stored snapshot totals
// over the window, in one statement, with the trees' figures and limits now.
func (m *Model) ProjectHistory(ctx context.Context, name string, o HistoryOptions) (ProjectHistory, error) {
	o, err := m.checkHistory(ctx, o)
	if err != nil {
		return ProjectHistory{}, err
	}
	p, err := m.Show(ctx, name)
	if err != nil {
		return ProjectHistory{}, err
	}
	now := m.Now()
	since := now.Add(-o.Since)
	snaps, err := m.Store.ProjectSnapshotTotals(ctx, p.Name, since)
	if err != nil {
		return ProjectHistory{}, fmt.Errorf("read %s's snapshots: %w", name, err)
	}
	byArea := map[string][]store.Snapshot{}
	for _, s := range snaps {
		byArea[s.Area] = append(byArea[s.Area], s)
	}
	out := ProjectHistory{Project: p.Name, GeneratedAt: now.UTC(), Since: since.UTC(), Trees: make([]TreeHistory, 0, len(p.Trees))}
	for _, t := range p.Trees {
		h := TreeHistory{Area: t.Area, UsedBytes: t.UsedBytes, BytesSoft: t.BytesSoft, BytesHard: t.BytesHard}
		points := make([]HistoryPoint, 0, len(byArea[t.Area]))
		for _, s := range byArea[t.Area] {
			if s.Partial {
				h.Partial++
				continue
			}
			points = append(points, HistoryPoint{At: s.At.UTC(), Bytes: s.SizeBytes, Files: s.Files})
		}
		h.Snapshots = len(points)
		h.Points, h.Thinned = thin(points, since, now, o.Points)
		out.Trees = append(out.Trees, h)
	}
	return out, nil
}

// DiskHistory reads the root's filesystem's use at each scheduled pass
// over the window, and now.
func (m *Model) DiskHistory(ctx context.Context, o HistoryOptions) (DiskHistory, error) {
	o, err := m.checkHistory(ctx, o)
	if err != nil {
		return DiskHistory{}, err
	}
	now := m.Now()
	since := now.Add(-o.Since)
	out := DiskHistory{GeneratedAt: now.UTC(), Since: since.UTC(), Points: []HistoryPoint{}}
	total, free, ok := m.DiskSize()
	if !ok {
		return out, nil // no size to take the passes' free space from
	}
	passes, err := m.Store.PassFree(ctx, since)
	if err != nil {
		return DiskHistory{}, fmt.Errorf("read the snapshot passes: %w", err)
	}
	out.TotalBytes, out.UsedBytes = total, total-min(free, total)
	points := make([]HistoryPoint, 0, len(passes))
	for _, p := range passes {
		if p.FreeBytes <= total {
			points = append(points, HistoryPoint{At: p.At.UTC(), Bytes: total - p.FreeBytes})
		}
	}
	out.Passes = len(points)
	out.Points, out.Thinned = thin(points, since, now, o.Points)
	return out, nil
}

// thin keeps at most n of points (oldest first), cutting the window into
// n spans of equal time and keeping each span's highest point: a chart
// that cannot show every point still shows each peak.
func thin(points []HistoryPoint, since, now time.Time, n int) ([]HistoryPoint, bool) {
	if len(points) <= n {
		return points, false
	}
	span := now.Sub(since) / time.Duration(n)
	if span <= 0 {
		span = 1
	}
	out := make([]HistoryPoint, 0, n)
	bucket := -1
	for _, p := range points {
		b := min(max(int(p.At.Sub(since)/span), 0), n-1)
		switch {
		case b != bucket:
			out = append(out, p)
			bucket = b
		case p.Bytes > out[len(out)-1].Bytes:
			out[len(out)-1] = p
		}
	}
	return out, true
}
