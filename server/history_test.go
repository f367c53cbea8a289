package server_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xfsq/xfsq/client"
	"github.com/xfsq/xfsq/internal/testsupport/fixture"
	"github.com/xfsq/xfsq/inventory"
	"github.com/xfsq/xfsq/sandbox"
	"github.com/xfsq/xfsq/store"
)

// storeSnapshots stores a snapshot of a tree per (hours ago, MiB) pair, as
// the snapshot pass would have; a negative size stores a partial walk of
// its absolute value.
func storeSnapshots(t *testing.T, r *fixture.Root, project, area string, now time.Time, points [][2]int) {
	t.Helper()
	err := sandbox.TestStore(r.Manager).InTx(r.Ctx, func(tx *store.Tx) error {
		for _, p := range points {
			size, partial := uint64(max(p[1], -p[1]))<<20, p[1] < 0
			s := store.Snapshot{Project: project, Area: area, At: now.Add(-time.Duration(p[0]) * time.Hour), SizeBytes: size,
				Files: uint64(p[0]), Partial: partial, KernelBytes: -1}
			if err := tx.AddSnapshot(r.Ctx, s, inventory.AppendStored(nil, &inventory.Node{Path: ".", SizeBytes: size}, nil), 35*24*time.Hour); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The history routes, through the client: a project's trees' stored
// totals over the window, oldest first, with the limits now; a partial
// walk left out and counted; a long window thinned to the points asked,
// each span drawn by its peak; the disk's use at each scheduled pass;
// bad parameters refused naming them, an unknown project 404.
func TestHistoryEndpoints(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		r.Add(100<<20, "omni")
		now := time.Now()
		storeSnapshots(t, r, "omni", "workspace", now, [][2]int{{50, 99}, {30, 10}, {20, 12}, {10, -1}, {9, 40}, {8, 14}, {2, 16}})
		storeSnapshots(t, r, "omni", "cache", now, [][2]int{{3, 5}, {1, 6}})
		ts := newServer(t, r)
		ctx := context.Background()
		rd := ts.client(readerToken)

		h, err := rd.ProjectHistory(ctx, "omni", client.HistoryOptions{Since: 48 * time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		byArea := map[string]int{}
		for i, tr := range h.Trees {
			byArea[tr.Area] = i
		}
		ws := h.Trees[byArea["workspace"]]
		var mib []string
		for i, p := range ws.Points {
			mib = append(mib, strconv.FormatUint(p.Bytes>>20, 10))
			if i > 0 && !p.At.After(ws.Points[i-1].At) {
				t.Errorf("points out of order at %d: %v", i, ws.Points)
			}
		}
		if got := strings.Join(mib, " "); got != "10 12 40 14 16" ||
			ws.Partial != 1 || ws.Snapshots != 5 || ws.Thinned || ws.BytesHard != 100<<20 {
			t.Errorf("the workspace over 48 h: MiB %s, partial %d, snapshots %d, thinned %v, hard %d; want 10 12 40 14 16 (the 50 h old one outside, the partial left out), 1, 5, no, 100 MiB",
				got, ws.Partial, ws.Snapshots, ws.Thinned, ws.BytesHard)
		}
		if c := h.Trees[byArea["cache"]]; len(c.Points) != 2 || c.Points[1].Bytes != 6<<20 {
			t.Errorf("the cache: %+v", c.Points)
		}
		thin, err := rd.ProjectHistory(ctx, "omni", client.HistoryOptions{Since: 48 * time.Hour, Points: 2})
		if err != nil {
			t.Fatal(err)
		}
		tw := thin.Trees[byArea["workspace"]]
		if len(tw.Points) != 2 || !tw.Thinned || tw.Points[1].Bytes != 40<<20 || tw.Points[0].Bytes != 10<<20 {
			t.Errorf("thinned to 2 points: %+v (thinned %v); want each day's peak, 10 MiB (30 h ago) and 40 MiB (9 h ago)", tw.Points, tw.Thinned)
		}

		// Two scheduled passes: the disk's points.
		for range 2 {
			if _, err := r.Manager.Snapshot(r.Ctx, sandbox.SnapshotOptions{Scheduled: true}); err != nil {
				t.Fatal(err)
			}
		}
		d, err := rd.DiskHistory(ctx, client.HistoryOptions{})
		if err != nil || d.TotalBytes == 0 || d.Passes != 2 || len(d.Points) != 2 || d.Points[0].Bytes == 0 || d.Points[0].Bytes > d.TotalBytes {
			t.Errorf("the disk's history after two passes: %v %+v", err, d)
		}

		for _, bad := range []string{"since=soon", "since=-1h", "points=1", "points=x", "points=10001"} {
			for _, path := range []string{"/v1/workspace/storage/projects/omni/history?", "/v1/workspace/storage/history?"} {
				if code, _, body := ts.raw(t, "GET", path+bad, readerToken, ""); code != 400 || !strings.Contains(body, strings.Split(bad, "=")[0]) {
					t.Errorf("%s%s: %d %s", path, bad, code, body)
				}
			}
		}
		var pe *client.ProblemError
		if _, err := rd.ProjectHistory(ctx, "nobody", client.HistoryOptions{}); !errors.As(err, &pe) || pe.Status != 404 {
			t.Errorf("an unknown project's history: %v, want 404", err)
		}
	})
}
