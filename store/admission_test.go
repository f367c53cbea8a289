package store

import (
	"errors"
	"testing"
	"time"

	"github.com/xfsq/xfsq/internal/testsupport/storetest"
	"github.com/xfsq/xfsq/quota"
	"github.com/xfsq/xfsq/store/internal/registry"
)

// Reserving first reclaims what can never be committed — reservations past
// their expiry and those whose holder is gone — and keeps live ones; a live
// reservation is renewed, a reclaimed one cannot be.
func TestReclaimDeadAndExpired(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		s, k := openWorkspace(t, dsn, quota.Limits{})
		dead := map[string]bool{"dead": true}
		gone := func(h string, _ HolderLease) bool { return dead[h] }
		ids := map[string]int64{}
		for _, c := range []struct {
			holder string
			ttl    time.Duration
		}{{"live", time.Hour}, {"dead", time.Hour}, {"stalled", time.Millisecond}} {
			id, _, err := s.Reserve(ctx, k, 100, 1, c.holder, "projects/omni/.xfsq-tmp-"+c.holder, c.ttl, nil, admitAll)
			if err != nil {
				t.Fatal(err)
			}
			ids[c.holder] = id
		}
		time.Sleep(5 * time.Millisecond)
		_, reclaimed, err := s.Reserve(ctx, k, 1, 0, "next", "", time.Hour, gone, admitAll)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		for _, r := range reclaimed {
			got[r.Holder] = true
		}
		if len(reclaimed) != 2 || !got["dead"] || !got["stalled"] {
			t.Errorf("reclaimed %+v, want the dead holder's and the stalled one", reclaimed)
		}
		if err := s.Renew(ctx, ids["live"], time.Hour); err != nil {
			t.Errorf("renewing a live reservation: %v", err)
		}
		for _, h := range []string{"dead", "stalled"} {
			if err := s.Renew(ctx, ids[h], time.Hour); !errors.Is(err, ErrReservationGone) {
				t.Errorf("renewing the %s holder's reclaimed reservation: %v, want ErrReservationGone", h, err)
			}
		}
		if _, err := s.Grow(ctx, k, ids["dead"], 10, time.Hour, gone, admitAll); !errors.Is(err, ErrReservationGone) {
			t.Errorf("growing a reclaimed reservation: %v", err)
		}
	})
}

// A tree's grace timers start when xfsq sees it go over a soft limit (a
// write through it, a walk, a limit change), keep their start while it
// stays over, and stop when it is back under: the fallback's counterpart of
// the kernel's timers.
func TestGraceTimers(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		s, k := openWorkspace(t, dsn, quota.Limits{BytesSoft: 1000, InodesSoft: 10})
		starts := func() (time.Time, time.Time) {
			t.Helper()
			b, i, err := s.GraceStarts(ctx, k)
			if err != nil {
				t.Fatal(err)
			}
			return b, i
		}
		if b, i := starts(); !b.IsZero() || !i.IsZero() {
			t.Fatalf("a new tree under its soft limits has timers %v %v", b, i)
		}
		before := time.Now()
		if err := s.AddLedger(ctx, k, 2000, 1, "test", time.Now()); err != nil {
			t.Fatal(err)
		}
		b, i := starts()
		if b.Before(before.Add(-time.Second)) || b.After(time.Now().Add(time.Second)) || !i.IsZero() {
			t.Fatalf("over the byte soft limit: timers %v %v, want bytes started now, inodes not", b, i)
		}
		time.Sleep(10 * time.Millisecond)
		if err := s.AddLedger(ctx, k, 100, 20, "test", time.Now()); err != nil {
			t.Fatal(err)
		}
		if b2, i2 := starts(); !b2.Equal(b) || i2.IsZero() {
			t.Errorf("still over: byte timer %v (was %v) must keep its start; inode timer %v must start", b2, b, i2)
		}
		// A walk finding the tree back under both stops both.
		if err := s.SetBaseline(ctx, k, quota.Usage{Bytes: 10, Inodes: 1}, WalkAt(time.Now()), WalkSeen{}); err != nil {
			t.Fatal(err)
		}
		if b, i := starts(); !b.IsZero() || !i.IsZero() {
			t.Errorf("back under: timers %v %v, want stopped", b, i)
		}
		// A soft limit lowered below the usage starts the timer.
		if err := s.InTx(ctx, func(tx *Tx) error {
			return tx.SetTreeLimits(ctx, "omni", "workspace", quota.Limits{BytesSoft: 5})
		}); err != nil {
			t.Fatal(err)
		}
		if b, _ := starts(); b.IsZero() {
			t.Error("a soft limit lowered below the usage did not start the byte timer")
		}
	})
}

// Read is what a check sees: it must agree with Account, the reading
// writes are admitted against, for a tree with a ledger and reservations,
// and count nothing of a neighbouring tree.
func TestReadAgreesWithAccount(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		s := open(t, dsn)
		if err := s.InTx(ctx, func(tx *Tx) error {
			if _, _, err := tx.InsertProject(ctx, "omni", "", time.Now()); err != nil {
				return err
			}
			for i, area := range []string{"workspace", "cache"} {
				if err := tx.InsertTree(ctx, Tree{Project: "omni", Area: area, Path: area, Backend: "fallback", FSUUID: "u", ProjectID: quota.ProjectID(i + 1),
					Limits: quota.Limits{BytesSoft: 10, BytesHard: 1000, InodesHard: 9}}); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		ws, cache := TreeKey{Project: "omni", Area: "workspace"}, TreeKey{Project: "omni", Area: "cache"}
		id, _, err := s.Reserve(ctx, ws, 100, 1, "a", "", time.Hour, nil, admitAll)
		if err == nil {
			_, _, err = s.Reserve(ctx, ws, 30, 2, "b", "", time.Hour, nil, admitAll)
		}
		if err == nil {
			_, _, err = s.Reserve(ctx, cache, 500, 5, "c", "", time.Hour, nil, admitAll)
		}
		if err == nil {
			err = s.CommitFile(ctx, ws, id, 80, 1, 0, "test")
		}
		if err != nil {
			t.Fatal(err)
		}
		read, err := s.Read(ctx, ws)
		if err != nil {
			t.Fatal(err)
		}
		limits, used, walked := read.Limits, read.Used, read.WalkedAt
		bytesSince, inodesSince, err := s.GraceStarts(ctx, ws)
		if err != nil || !read.BytesSoftSince.Equal(bytesSince) || !read.InodesSoftSince.Equal(inodesSince) || bytesSince.IsZero() {
			t.Errorf("grace timers %v %v, GraceStarts %v %v (%v): want the same, bytes over their soft limit", read.BytesSoftSince, read.InodesSoftSince, bytesSince, inodesSince, err)
		}
		wantLimits, wantUsed, _, err := s.Account(ctx, ws)
		if err != nil {
			t.Fatal(err)
		}
		if limits != wantLimits || used != wantUsed || used != (quota.Usage{Bytes: 110, Inodes: 3}) {
			t.Errorf("Read %+v %+v, Account %+v %+v, want usage 110 bytes 3 inodes", limits, used, wantLimits, wantUsed)
		}
		if baseline, _ := s.Baseline(ctx, ws); !walked.Equal(baseline.At) || baseline.Hidden {
			t.Errorf("walked %v, Baseline %v", walked, baseline)
		}
		if _, err := s.Read(ctx, TreeKey{Project: "omni", Area: "scratch"}); !errors.Is(err, ErrNotFound) {
			t.Errorf("an unknown tree: %v, want ErrNotFound", err)
		}
	})
}

// A walk keeps the ledger rows of writes committed but not yet linked
// (their files may be invisible to it), and only those: an upload still
// streaming beside it must not keep the rows of the writes that finished,
// which the walk counts already. Counted twice, a tenant holding a slow
// upload open could take a neighbour's share of the root budget (found by
// a hostile-tenant attack).
func TestWalkKeepsOnlyTheRowsOfWritesBeingLinked(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		s, ws := openWorkspace(t, dsn, quota.Limits{BytesHard: 1 << 30})
		reserve := func(bytes uint64) int64 {
			t.Helper()
			id, _, err := s.Reserve(ctx, ws, bytes, 1, "w", "uploads/.xfsq-tmp", time.Hour, nil, admitAll)
			if err != nil {
				t.Fatal(err)
			}
			return id
		}
		used := func() uint64 { t.Helper(); return readUsed(t, s, ws).Bytes }
		walk := func(seen uint64) {
			t.Helper()
			time.Sleep(time.Millisecond) // the walk begins after the rows' stamps
			w, err := s.BeginWalk(ctx, ws, time.Now())
			if err == nil {
				err = s.SetBaseline(ctx, ws, quota.Usage{Bytes: seen}, w, WalkSeen{})
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		reserve(1000) // an upload streaming throughout
		done := reserve(50)
		if err := s.CommitFile(ctx, ws, done, 50, 1, 0, "w"); err != nil {
			t.Fatal(err)
		}
		linking := reserve(20)
		if err := s.CommitFile(ctx, ws, linking, 20, 1, 0, "w"); err != nil {
			t.Fatal(err)
		}
		if err := s.Release(ctx, done); err != nil { // its file is in place
			t.Fatal(err)
		}
		// The walk sees the finished file (50) but not the one being linked.
		walk(50)
		if got, want := used(), uint64(50+20+1000); got != want {
			t.Errorf("after a walk beside a streaming upload and a write being linked: %d bytes, want %d "+
				"(the walk's 50, the unlinked write's 20 kept, the stream's 1000 reserved)", got, want)
		}
		if err := s.Release(ctx, linking); err != nil {
			t.Fatal(err)
		}
		walk(70)
		if got, want := used(), uint64(70+1000); got != want {
			t.Errorf("after a walk that sees both files: %d bytes, want %d", got, want)
		}
	})
}

// The mark a commit leaves until its file is linked outlives the write's
// TTL: another writer reclaiming it in between would let a walk drop the
// write's ledger row.
func TestCommittedMarkOutlivesTheTTL(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		s, ws := openWorkspace(t, dsn, quota.Limits{})
		id, _, err := s.Reserve(ctx, ws, 10, 1, "w", "", 200*time.Millisecond, nil, admitAll)
		if err == nil {
			err = s.CommitFile(ctx, ws, id, 10, 1, 0, "w")
		}
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond) // past the write's TTL
		if reclaimed, err := s.Reclaim(ctx, nil); err != nil || len(reclaimed) != 0 {
			t.Fatalf("reclaimed %+v (%v): the mark of a write being linked went with its TTL", reclaimed, err)
		}
		w, err := s.BeginWalk(ctx, ws, time.Now())
		if err != nil || !w.Settled.Before(w.At) {
			t.Errorf("a walk beside the write being linked: %+v, %v; want Settled before At", w, err)
		}
	})
}

// admitAll admits every demand: for tests of the bookkeeping, not of limits.
func admitAll(AdmitState) error { return nil }

// openWorkspace is a store holding project omni with one fallback
// workspace tree under limits, and that tree's key.
func openWorkspace(t *testing.T, dsn string, limits quota.Limits) (*Store, TreeKey) {
	t.Helper()
	s := open(t, dsn)
	if err := s.InTx(ctx, func(tx *Tx) error {
		if _, _, err := tx.InsertProject(ctx, "omni", "", time.Now()); err != nil {
			return err
		}
		return tx.InsertTree(ctx, Tree{Project: "omni", Area: "workspace", Path: "projects/omni", Backend: "fallback", FSUUID: "u", ProjectID: 1, Limits: limits})
	}); err != nil {
		t.Fatal(err)
	}
	return s, TreeKey{Project: "omni", Area: "workspace"}
}

// ledgerSums reads each tree's kept ledger sum beside the sum of its rows,
// which admission must agree with whatever wrote or dropped them.
func ledgerSums(t *testing.T, s *Store) (kept, rows map[TreeKey]quota.Usage) {
	t.Helper()
	kept, rows = map[TreeKey]quota.Usage{}, map[TreeKey]quota.Usage{}
	var ks []struct {
		Project, Area string
		Bytes, Inodes int64
	}
	if err := s.SQL.SelectContext(ctx, &ks, s.SQL.Rebind(`SELECT project, area, ledger_bytes AS bytes, ledger_inodes AS inodes FROM trees WHERE host = ?`), s.Host); err != nil {
		t.Fatal(err)
	}
	for _, r := range ks {
		kept[TreeKey{Project: r.Project, Area: r.Area}] = quota.Usage{Bytes: uint64(r.Bytes), Inodes: uint64(r.Inodes)}
		var sum struct{ Bytes, Inodes int64 }
		if err := s.SQL.GetContext(ctx, &sum, s.SQL.Rebind(`SELECT COALESCE(SUM(bytes), 0) AS bytes, COALESCE(SUM(inodes), 0) AS inodes FROM ledger
			WHERE host = ? AND project = ? AND area = ?`), s.Host, r.Project, r.Area); err != nil {
			t.Fatal(err)
		}
		rows[TreeKey{Project: r.Project, Area: r.Area}] = quota.Usage{Bytes: uint64(sum.Bytes), Inodes: uint64(sum.Inodes)}
	}
	return kept, rows
}

// Each tree keeps its ledger's sum on its row, so that a write reads the
// root's usage without summing every tree's rows under the admission lock.
// Whatever adds rows (a commit, a credit, a placed overwrite) or drops
// them (a walk, a removal), the kept sum is the rows' sum, and admission's
// figure the walk plus it plus the writes in flight.
func TestLedgerSumFollowsItsRows(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		s, omni := openWorkspace(t, dsn, quota.Limits{})
		beta := TreeKey{Project: "beta", Area: "workspace"}
		addTree := func(k TreeKey) error {
			return s.InTx(ctx, func(tx *Tx) error {
				if _, _, err := tx.InsertProject(ctx, k.Project, "", time.Now()); err != nil {
					return err
				}
				return tx.InsertTree(ctx, Tree{Project: k.Project, Area: k.Area, Path: "projects/" + k.Project, Backend: "fallback", FSUUID: "u", ProjectID: 2})
			})
		}
		write := func(k TreeKey, bytes int64) func() error {
			return func() error {
				id, _, err := s.Reserve(ctx, k, uint64(bytes), 1, "h", "", time.Hour, nil, admitAll)
				if err != nil {
					return err
				}
				if err := s.CommitFile(ctx, k, id, bytes, 1, 0, "test"); err != nil {
					return err
				}
				return s.Placed(ctx, k, id, Replaced{Counted: quota.Usage{Bytes: 100}}, Grown{}, "test", time.Now())
			}
		}
		var walkStart time.Time
		steps := []struct {
			name string
			do   func() error
		}{
			{"add beta", func() error { return addTree(beta) }},
			{"write omni", write(omni, 5000)},
			{"write beta", write(beta, 7000)},
			{"credit omni", func() error { return s.AddLedger(ctx, omni, -1000, -1, "test", time.Now()) }},
			{"walk of omni begins", func() error { walkStart = time.Now(); return nil }},
			{"write omni during the walk", write(omni, 300)},
			{"walk of omni recorded", func() error {
				return s.SetBaseline(ctx, omni, quota.Usage{Bytes: 3900, Inodes: 1}, WalkAt(walkStart), WalkSeen{})
			}},
			{"a credit from before the walk ended (dropped)", func() error {
				return s.AddLedger(ctx, omni, -50, 0, "test", walkStart)
			}},
			{"remove beta", func() error {
				return s.InTx(ctx, func(tx *Tx) error { return tx.DeleteProject(ctx, "beta") })
			}},
			{"a row of beta's left after its removal", func() error {
				// As a credit racing the removal under PostgreSQL leaves it:
				// it read the tree before the removal committed.
				_, err := s.SQL.ExecContext(ctx, s.SQL.Rebind(`INSERT INTO ledger (host, project, area, bytes, inodes, at) VALUES (?, 'beta', 'workspace', 600, 1, ?)`),
					s.Host, toMicros(time.Now()))
				return err
			}},
			{"add beta again", func() error { return addTree(beta) }},
			{"write beta again", write(beta, 2000)},
		}
		for _, step := range steps {
			if err := step.do(); err != nil {
				t.Fatalf("%s: %v", step.name, err)
			}
			kept, rows := ledgerSums(t, s)
			for k, sum := range rows {
				if kept[k] != sum {
					t.Errorf("after %s: %s/%s keeps a ledger sum of %+v, its rows sum to %+v", step.name, k.Project, k.Area, kept[k], sum)
				}
			}
		}
		// omni: the walk's 3,900 and the write during it (300; the 100 its
		// placing credited began before the walk ended, so the walk may
		// have seen it: dropped); beta anew: 2,000 less the 100 credited.
		for k, want := range map[TreeKey]uint64{omni: 3900 + 300, beta: 2000 - 100} {
			r, err := s.Read(ctx, k)
			if err != nil {
				t.Fatal(err)
			}
			_, used, root, err := s.Account(ctx, k)
			if err != nil {
				t.Fatal(err)
			}
			if r.Used.Bytes != want || used.Bytes != want {
				t.Errorf("%s: Read says %d bytes, Account %d, want %d", k.Project, r.Used.Bytes, used.Bytes, want)
			}
			if root != 3900+300+2000-100 {
				t.Errorf("the root's usage %d, want %d", root, 3900+300+2000-100)
			}
		}
		us, err := s.TreeUsages(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range us {
			r, _ := s.Read(ctx, TreeKey{Project: u.Project, Area: u.Area})
			if u.Used != r.Used {
				t.Errorf("%s: TreeUsages says %+v, Read %+v", u.Project, u.Used, r.Used)
			}
		}
	})
}

// A store migrated from 12 keeps the sums of the rows it already had.
func TestLedgerSumAcrossMigration13(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		old := openAtVersion(t, dsn, 12)
		if err := old.InTx(ctx, func(tx *Tx) error {
			if _, _, err := tx.InsertProject(ctx, "omni", "", time.Now()); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `INSERT INTO trees (host, `+registry.TreeCols+`) VALUES (?, 'omni', 'workspace', 'projects/omni', 'fallback', 'u', 1, 0, 0, 0, 0, FALSE)`, old.Host); err != nil {
				return err
			}
			for _, b := range []int64{4096, 8192, -1000} {
				if _, err := tx.Exec(ctx, `INSERT INTO ledger (host, project, area, bytes, inodes, at) VALUES (?, 'omni', 'workspace', ?, 1, 1)`, old.Host, b); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		old.Close()
		s := open(t, dsn)
		r, err := s.Read(ctx, TreeKey{Project: "omni", Area: "workspace"})
		if err != nil {
			t.Fatal(err)
		}
		if r.Used != (quota.Usage{Bytes: 4096 + 8192 - 1000, Inodes: 3}) {
			t.Errorf("after migration 13: %+v, want the rows' sum", r.Used)
		}
	})
}

// An overwrite credits a file written through xfsq since the last walk
// what that write's row counted, at most its blocks now, and only once:
// another file taking the inode number later (or the number of a write
// undone) is credited nothing, so credits never pass what was counted.
func TestPlacedCreditsAnInodesRowOnce(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		s, k := openWorkspace(t, dsn, quota.Limits{})
		commit := func(bytes int64, ino uint64) int64 {
			t.Helper()
			id, _, err := s.Reserve(ctx, k, uint64(bytes), 1, "h", "", time.Hour, nil, admitAll)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.CommitFile(ctx, k, id, bytes, 1, ino, "test"); err != nil {
				t.Fatal(err)
			}
			return id
		}
		used := func() quota.Usage {
			t.Helper()
			r, err := s.Read(ctx, k)
			if err != nil {
				t.Fatal(err)
			}
			return r.Used
		}
		place := func(id int64, r Replaced) {
			t.Helper()
			if err := s.Placed(ctx, k, id, r, Grown{}, "test", time.Now()); err != nil {
				t.Fatal(err)
			}
		}
		place(commit(8192, 100), Replaced{})
		place(commit(4096, 101), Replaced{Ino: 100, Bytes: 12288}) // grown outside xfsq: only the 8,192 counted
		if got := used(); got != (quota.Usage{Bytes: 4096, Inodes: 1}) {
			t.Errorf("after an overwrite of inode 100: %+v, want its row's 8,192 bytes and inode back", got)
		}
		place(commit(4096, 102), Replaced{Ino: 100, Bytes: 8192}) // the number again: a file nothing counted
		if got := used(); got != (quota.Usage{Bytes: 8192, Inodes: 2}) {
			t.Errorf("inode 100 credited twice: %+v", got)
		}
		id := commit(4096, 103)
		if err := s.Uncommit(ctx, k, 4096, 1, 103, "test"); err != nil {
			t.Fatal(err)
		}
		place(id, Replaced{})
		place(commit(4096, 104), Replaced{Ino: 103, Bytes: 4096}) // an undone write's number
		if got := used(); got != (quota.Usage{Bytes: 12288, Inodes: 3}) {
			t.Errorf("an undone write's inode credited: %+v", got)
		}
	})
}

// A project's removal and a write into it, both under PostgreSQL's row
// locks: the write locks its reservation, then the tree's row (its ledger
// sum); a removal that locked the tree's row and then wanted the
// reservation closed a cycle, and PostgreSQL aborted one of them
// ("deadlock detected"). A removal takes the admission lock first, as a
// write does, so the two queue instead.
func TestRemovalBesideWritesNeverDeadlocks(t *testing.T) {
	dsn := storetest.Postgres(t)
	s, k := openWorkspace(t, dsn, quota.Limits{})
	remover := open(t, dsn)
	stop := time.Now().Add(2 * time.Second)
	errs := make(chan error, 2)
	go func() {
		for time.Now().Before(stop) {
			if err := remover.InTx(ctx, func(tx *Tx) error { return tx.DeleteProject(ctx, k.Project) }); err != nil {
				errs <- err
				return
			}
			if err := remover.InTx(ctx, func(tx *Tx) error {
				if _, _, err := tx.InsertProject(ctx, k.Project, "", time.Now()); err != nil {
					return err
				}
				return tx.InsertTree(ctx, Tree{Project: k.Project, Area: k.Area, Path: "projects/omni", Backend: "fallback", FSUUID: "u", ProjectID: 1})
			}); err != nil {
				errs <- err
				return
			}
		}
		errs <- nil
	}()
	go func() {
		for time.Now().Before(stop) {
			id, _, err := s.Reserve(ctx, k, 4096, 1, "h", "", time.Hour, nil, admitAll)
			if errors.Is(err, ErrNotFound) {
				continue
			}
			if err == nil {
				err = s.CommitFile(ctx, k, id, 4096, 1, 0, "test")
			}
			if err != nil && !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrReservationGone) {
				errs <- err
				return
			}
		}
		errs <- nil
	}()
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatalf("a removal beside writes: %v", err)
		}
	}
}

// The root's usage floors each tree at nothing, as a tree's own usage is
// floored: a tree whose credits outran what was counted must not lower
// what its neighbours may use of root_budget.
func TestRootUsageFloorsEachTree(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		s, omni := openWorkspace(t, dsn, quota.Limits{})
		if err := s.InTx(ctx, func(tx *Tx) error {
			if _, _, err := tx.InsertProject(ctx, "beta", "", time.Now()); err != nil {
				return err
			}
			return tx.InsertTree(ctx, Tree{Project: "beta", Area: "workspace", Path: "projects/beta", Backend: "fallback", FSUUID: "u", ProjectID: 2})
		}); err != nil {
			t.Fatal(err)
		}
		beta := TreeKey{Project: "beta", Area: "workspace"}
		if err := s.SetBaseline(ctx, beta, quota.Usage{Bytes: 8192, Inodes: 1}, WalkAt(time.Now()), WalkSeen{}); err != nil {
			t.Fatal(err)
		}
		if err := s.AddLedger(ctx, omni, -1<<20, 0, "test", time.Now()); err != nil {
			t.Fatal(err)
		}
		if _, _, root, err := s.Account(ctx, beta); err != nil || root != 8192 {
			t.Errorf("the root's usage with one tree below nothing: %d (%v), want the other tree's 8192", root, err)
		}
	})
}

// A walk that mount points hid part of the tree from is a floor, like an
// unsettled one, and the tree's baseline says so until a walk sees it all:
// its figure never lowers the usage, and Baseline.Hidden is what keeps
// removals and overwrites from being credited by it. A pass's batch
// (Tx.SetBaselines) takes a walk as SetBaseline does.
func TestBaselineKeepsAHiddenWalk(t *testing.T) {
	for _, batch := range []bool{false, true} {
		t.Run(map[bool]string{false: "one", true: "batch"}[batch], func(t *testing.T) {
			storetest.ForEach(t, func(t *testing.T, dsn string) { testHiddenWalk(t, dsn, batch) })
		})
	}
}

func testHiddenWalk(t *testing.T, dsn string, batch bool) {
	s, k := openWorkspace(t, dsn, quota.Limits{})
	set := func(bytes uint64, seen WalkSeen) (quota.Usage, Baseline) {
		t.Helper()
		u, w := quota.Usage{Bytes: bytes, Inodes: 1}, WalkAt(time.Now())
		var err error
		if batch {
			err = s.InTx(ctx, func(tx *Tx) error {
				return tx.SetBaselines(ctx, []WalkRecord{{Snapshot: Snapshot{Project: k.Project, Area: k.Area},
					Baseline: &WalkBaseline{Usage: u, Walk: w, Seen: seen}}})
			})
		} else {
			err = s.SetBaseline(ctx, k, u, w, seen)
		}
		if err != nil {
			t.Fatal(err)
		}
		r, err := s.Read(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		b, err := s.Baseline(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		return r.Used, b
	}
	if used, b := set(1<<20, WalkSeen{}); used.Bytes != 1<<20 || b.Hidden {
		t.Fatalf("a whole walk: %+v %+v", used, b)
	}
	if used, b := set(4096, WalkSeen{Hidden: true}); used.Bytes != 1<<20 || !b.Hidden {
		t.Errorf("a hidden walk of less: usage %d, hidden %v; want the usage kept and the walk marked", used.Bytes, b.Hidden)
	}
	if used, b := set(2<<20, WalkSeen{Hidden: true}); used.Bytes != 2<<20 || !b.Hidden {
		t.Errorf("a hidden walk of more: usage %d, hidden %v; want it raised and marked", used.Bytes, b.Hidden)
	}
	if used, b := set(4096, WalkSeen{}); used.Bytes != 4096 || b.Hidden {
		t.Errorf("a whole walk after: usage %d, hidden %v; want its figure and the mark gone", used.Bytes, b.Hidden)
	}
	if used, _ := set(1024, WalkSeen{Unsettled: true}); used.Bytes != 4096 {
		t.Errorf("an unsettled walk of less: usage %d, want 4096 kept", used.Bytes)
	}
}

// A removal credits each freed inode the walk did not count what its own
// write's row counted, at most its blocks, and consumes the row: the same
// number freed again (another file that took it) is credited nothing,
// whether by a removal or an overwrite; an inode without a row, nothing.
func TestRemovedCreditsAnInodesRowOnce(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		s, k := openWorkspace(t, dsn, quota.Limits{})
		id, _, err := s.Reserve(ctx, k, 8192, 1, "h", "", time.Hour, nil, admitAll)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.CommitFile(ctx, k, id, 8192, 1, 77, "test"); err != nil {
			t.Fatal(err)
		}
		if err := s.Placed(ctx, k, id, Replaced{}, Grown{}, "test", time.Now()); err != nil {
			t.Fatal(err)
		}
		used := func() quota.Usage {
			t.Helper()
			r, err := s.Read(ctx, k)
			if err != nil {
				t.Fatal(err)
			}
			return r.Used
		}
		if err := s.Removed(ctx, k, quota.Usage{}, []Freed{{Ino: 78, Bytes: 4096}, {Ino: 77, Bytes: 4096}}, "test", time.Now()); err != nil {
			t.Fatal(err)
		}
		if u := used(); u != (quota.Usage{Bytes: 4096, Inodes: 0}) {
			t.Errorf("after the removal: %+v; want the row's 8192 less the 4096 blocks freed, no inode", u)
		}
		if err := s.Removed(ctx, k, quota.Usage{}, []Freed{{Ino: 77, Bytes: 4096}}, "test", time.Now()); err != nil {
			t.Fatal(err)
		}
		id, _, err = s.Reserve(ctx, k, 0, 0, "h", "", time.Hour, nil, admitAll)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Placed(ctx, k, id, Replaced{Ino: 77, Bytes: 4096}, Grown{}, "test", time.Now()); err != nil {
			t.Fatal(err)
		}
		if u := used(); u != (quota.Usage{Bytes: 4096, Inodes: 0}) {
			t.Errorf("the number freed again: %+v; want nothing more credited", u)
		}
	})
}

// A refusal by one of the tree's limits names what writes in progress hold
// of the usage it names, less the asking write's own; other refusals and
// other errors are left as they are. Through Reserve, a writer refused
// beside another's reservation is told that reservation.
func TestARefusalNamesWhatWritesInProgressHold(t *testing.T) {
	a := AdmitState{Reserved: quota.Usage{Bytes: 300, Inodes: 4}}
	for _, c := range []struct {
		limit string
		used  uint64
		own   quota.Usage
		want  uint64
	}{
		{"bytes_hard", 1000, quota.Usage{}, 300},
		{"bytes_soft", 1000, quota.Usage{Bytes: 100}, 200},
		{"inodes_hard", 10, quota.Usage{Inodes: 1}, 3},
		{"inodes_soft", 2, quota.Usage{}, 2}, // never more than the usage named
		{"root_budget", 1000, quota.Usage{}, 0},
		{quota.LimitMaxFileBytes, 0, quota.Usage{}, 0},
	} {
		le := &quota.LimitError{Limit: c.limit, Used: c.used}
		if err := a.NameReserved(le, c.own); err != le || le.Reserved != c.want {
			t.Errorf("%s: %v, reserved %d; want the same error, reserved %d", c.limit, err, le.Reserved, c.want)
		}
	}
	other := errors.New("not a limit")
	if err := a.NameReserved(other, quota.Usage{}); err != other {
		t.Errorf("another error came back as %v", err)
	}
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		s, k := openWorkspace(t, dsn, quota.Limits{})
		if _, _, err := s.Reserve(ctx, k, 300, 1, "first", "", time.Hour, nil, admitAll); err != nil {
			t.Fatal(err)
		}
		_, _, err := s.Reserve(ctx, k, 1, 0, "second", "", time.Hour, nil, func(a AdmitState) error {
			return &quota.LimitError{Limit: "bytes_hard", Used: a.Used.Bytes, Requested: 1, Max: a.Used.Bytes}
		})
		var le *quota.LimitError
		if !errors.As(err, &le) || le.Reserved != 300 {
			t.Errorf("refused beside a reservation of 300 bytes: %v (reserved %v)", err, le)
		}
	})
}

// Placed settles what a commit counted for its directories' growth at
// what was measured: more is charged, less credited back. A credit is
// dropped where a walk that ended after the commit began may have dropped
// the commit's row; a charge is kept by a walk that began before the file
// was placed, which may not have seen the growth.
func TestPlacedSettlesTheDirectoriesGrowth(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		s, k := openWorkspace(t, dsn, quota.Limits{})
		used := func() uint64 { t.Helper(); return readUsed(t, s, k).Bytes }
		// place commits a write of 4096 bytes of content and an estimate
		// of 4096 for its name, then settles at measured; walk, when not
		// nil, runs between the commit and Placed.
		place := func(measured uint64, walk func()) {
			t.Helper()
			id, _, err := s.Reserve(ctx, k, 8192, 1, "h", "", time.Hour, nil, admitAll)
			if err != nil {
				t.Fatal(err)
			}
			committing := time.Now()
			if err := s.CommitFile(ctx, k, id, 8192, 1, 0, "test"); err != nil {
				t.Fatal(err)
			}
			if walk != nil {
				walk()
			}
			if err := s.Placed(ctx, k, id, Replaced{}, Grown{Estimated: 4096, Measured: measured, Committed: committing}, "test", time.Now()); err != nil {
				t.Fatal(err)
			}
		}
		for _, c := range []struct {
			name     string
			measured uint64
			want     uint64
		}{
			{"the name fitted", 0, 4096},
			{"the directory grew a block", 4096, 8192},
			{"the directory grew two", 8192, 12288},
		} {
			before := used()
			place(c.measured, nil)
			if got := used() - before; got != c.want {
				t.Errorf("%s: the ledger grew %d, want %d", c.name, got, c.want)
			}
		}
		// A walk after the commit that dropped its row (the emptied
		// reservation reclaimed, a writer slow to place) saw the file and
		// no growth: the credit goes with the row, or the ledger would
		// count less than the walk found.
		before := used()
		place(0, func() {
			if err := s.SetBaseline(ctx, k, quota.Usage{Bytes: before + 4096}, WalkAt(time.Now()), WalkSeen{}); err != nil {
				t.Fatal(err)
			}
		})
		if got := used() - before; got != 4096 {
			t.Errorf("a walk that dropped the commit's row: the ledger grew %d, want the 4096 the walk found", got)
		}
		// A walk that began before Placed keeps its charge.
		before = used()
		var w Walk
		place(8192, func() {
			var err error
			if w, err = s.BeginWalk(ctx, k, time.Now()); err != nil {
				t.Fatal(err)
			}
		})
		if err := s.SetBaseline(ctx, k, quota.Usage{Bytes: before}, w, WalkSeen{}); err != nil {
			t.Fatal(err)
		}
		if got := used() - before; got != 12288 {
			t.Errorf("a walk begun before placing: the ledger grew %d, want the commit and the growth beyond its estimate (12288)", got)
		}
	})
}

// readUsed is a tree's usage as admission counts it.
func readUsed(t testing.TB, s *Store, k TreeKey) quota.Usage {
	t.Helper()
	r, err := s.Read(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	return r.Used
}
