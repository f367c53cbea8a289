package store

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/xfsq/xfsq/internal/testsupport/storetest"
	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/quota"
)

// newProject is a project add of name with trees a, b and c on "fs".
func newProject(name string, r quota.IDRange, excluded map[quota.ProjectID]bool) NewProject {
	p := NewProject{Name: name, Adder: "", Created: time.Now(), FSKey: "fs", Range: r, Excluded: excluded}
	for _, a := range []string{"a", "b", "c"} {
		p.Trees = append(p.Trees, Tree{Project: name, Area: a, Path: name + "/" + a, Backend: "fallback", FSUUID: "fs",
			Limits: quota.Limits{BytesHard: 1 << 20}, CreatedDir: true})
	}
	return p
}

func recordAdd(t *testing.T, s *Store, p NewProject) (trees []Tree, existing Project, inserted bool) {
	t.Helper()
	err := s.InTx(ctx, func(tx *Tx) (err error) {
		trees, existing, inserted, err = tx.AddProject(ctx, p)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return trees, existing, inserted
}

// AddProject hands out the IDs after the highest (skipping the excluded),
// the lowest free ones once the range's top is taken, records the trees
// with them, and records nothing for a name that is taken.
func TestAddProject(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		s := open(t, dsn)
		rng := quota.IDRange{First: 10, Last: 16}
		ids := func(trees []Tree) []quota.ProjectID {
			var out []quota.ProjectID
			for _, tr := range trees {
				out = append(out, tr.ProjectID)
			}
			return out
		}
		trees, _, inserted := recordAdd(t, s, newProject("p1", rng, map[quota.ProjectID]bool{11: true}))
		if !inserted || !slices.Equal(ids(trees), []quota.ProjectID{10, 12, 13}) {
			t.Fatalf("first add: inserted %v, IDs %v; want [10 12 13] (11 excluded)", inserted, ids(trees))
		}
		recorded, err := s.Trees(ctx, "p1")
		if err != nil || !slices.Equal(ids(recorded), ids(trees)) || recorded[0].Path != "p1/a" || recorded[0].Limits.BytesHard != 1<<20 || !recorded[0].CreatedDir {
			t.Fatalf("recorded trees %+v, %v", recorded, err)
		}
		if p, err := s.Project(ctx, "p1"); err != nil || p.State != StateAdding {
			t.Fatalf("project row %+v, %v; want adding", p, err)
		}
		if _, existing, inserted := recordAdd(t, s, newProject("p1", rng, nil)); inserted || existing.State != StateAdding {
			t.Fatalf("a taken name: inserted %v, existing %+v", inserted, existing)
		}
		// 14-16 after the highest: 14, 15, 16.
		if trees, _, _ := recordAdd(t, s, newProject("p2", rng, nil)); !slices.Equal(ids(trees), []quota.ProjectID{14, 15, 16}) {
			t.Fatalf("second add: IDs %v; want [14 15 16]", ids(trees))
		}
		// The top taken: the lowest free, 11 no longer excluded, then none.
		if err := s.InTx(ctx, func(tx *Tx) error { return tx.ReleaseID(ctx, "fs", 12) }); err != nil {
			t.Fatal(err)
		}
		err = s.InTx(ctx, func(tx *Tx) error {
			_, _, _, err := tx.AddProject(ctx, newProject("p3", rng, nil))
			return err
		})
		if err == nil {
			t.Fatal("p3 got three IDs where two are free")
		}
		if _, err := s.Project(ctx, "p3"); err == nil {
			t.Fatal("a refused add left its project row")
		}
		if err := s.InTx(ctx, func(tx *Tx) error { return tx.ReleaseID(ctx, "fs", 13) }); err != nil {
			t.Fatal(err)
		}
		if trees, _, _ := recordAdd(t, s, newProject("p3", rng, nil)); !slices.Equal(ids(trees), []quota.ProjectID{11, 12, 13}) {
			t.Fatalf("add with the top taken: IDs %v; want [11 12 13]", ids(trees))
		}
		recs, err := s.IDs(ctx, "fs")
		if err != nil {
			t.Fatal(err)
		}
		owners := map[quota.ProjectID]string{}
		for _, r := range recs {
			owners[r.ProjectID] = r.Owner
		}
		if owners[11] != "p3/a" || owners[13] != "p3/c" || owners[16] != "p2/c" || len(owners) != 7 {
			t.Errorf("registry %v", owners)
		}
	})
}

// Independent handles (separate processes, or hosts under one host name
// after a take-over) adding at once never hold an ID twice, and of adds of
// one name exactly one records it.
func TestAddProjectConcurrent(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		open(t, dsn)
		const workers, each = 4, 8
		type got struct {
			owner string
			id    quota.ProjectID
		}
		out := make(chan got, workers*each*3)
		var mu sync.Mutex
		wins := 0
		eachHandle(t, dsn, workers, func(w int, s *Store) {
			for i := range each {
				name := fmt.Sprintf("w%d-%d", w, i)
				if i == each/2 {
					name = "same"
				}
				var trees []Tree
				var inserted bool
				if err := s.InTx(ctx, func(tx *Tx) (err error) {
					trees, _, inserted, err = tx.AddProject(ctx, newProject(name, quota.DefaultRange, nil))
					return err
				}); err != nil {
					t.Error(err)
					return
				}
				if name == "same" && inserted {
					mu.Lock()
					wins++
					mu.Unlock()
				}
				for _, tr := range trees {
					out <- got{tr.Project + "/" + tr.Area, tr.ProjectID}
				}
			}
		})
		close(out)
		if wins != 1 {
			t.Errorf("%d concurrent adds of one name recorded it, want 1", wins)
		}
		s := open(t, dsn)
		owner := registryOwners(t, s, "fs")
		trees, err := s.Trees(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		treeOf := map[quota.ProjectID]string{}
		for _, tr := range trees {
			treeOf[tr.ProjectID] = tr.Project + "/" + tr.Area
		}
		n := 0
		for g := range out {
			n++
			if owner[g.id] != g.owner || treeOf[g.id] != g.owner {
				t.Errorf("ID %d was handed to %s; the registry says %q, the trees %q", g.id, g.owner, owner[g.id], treeOf[g.id])
			}
		}
		if want := (workers*(each-1) + 1) * 3; n != want || len(owner) != want {
			t.Errorf("%d IDs handed out, %d registered; want %d", n, len(owner), want)
		}
	})
}

// MakeReady records the walks as baselines, makes the project ready and
// journals it, and answers the trees as Read reads them; with the project
// gone it records nothing and says so.
func TestMakeReady(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		s := open(t, dsn)
		trees, _, _ := recordAdd(t, s, newProject("p", quota.DefaultRange, nil))
		var walks []WalkRecord
		added := journal.ProjectAdded{Backend: "fallback"}
		for i, tr := range trees {
			walks = append(walks, WalkRecord{Snapshot: Snapshot{Project: tr.Project, Area: tr.Area},
				Baseline: &WalkBaseline{Usage: quota.Usage{Bytes: uint64(4096 * (i + 1)), Inodes: uint64(i + 1)}, Walk: WalkAt(time.Now())}})
			added.Trees = append(added.Trees, journal.Tree{Project: tr.Project, Area: tr.Area, Path: tr.Path})
		}
		reads, err := s.MakeReady(ctx, "p", "", "tester", walks, added)
		if err != nil {
			t.Fatal(err)
		}
		for i, tr := range trees {
			want, err := s.Read(ctx, TreeKey{Project: tr.Project, Area: tr.Area})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(reads[i], want) || want.Used.Bytes != uint64(4096*(i+1)) {
				t.Errorf("%s: MakeReady answered %+v, Read reads %+v", tr.Area, reads[i], want)
			}
		}
		if p, err := s.Project(ctx, "p"); err != nil || p.State != StateReady || p.Adder != "" {
			t.Errorf("project after MakeReady: %+v, %v", p, err)
		}
		evs, err := s.Events(ctx, EventFilter{Project: "p"})
		if err != nil || len(evs) != 1 || evs[0].Type != journal.TypeProjectAdded || evs[0].Actor != "tester" {
			t.Errorf("journal after MakeReady: %+v, %v", evs, err)
		}

		// XFS: nothing walked, the kernel counts.
		recordAdd(t, s, newProject("xfs", quota.DefaultRange, nil))
		if reads, err := s.MakeReady(ctx, "xfs", "", "tester", nil, journal.ProjectAdded{Backend: "xfs"}); err != nil || len(reads) != 0 {
			t.Errorf("MakeReady without walks: %+v, %v", reads, err)
		}
		if p, err := s.Project(ctx, "xfs"); err != nil || p.State != StateReady {
			t.Errorf("project after MakeReady without walks: %+v, %v", p, err)
		}
		if evs, err := s.Events(ctx, EventFilter{Project: "xfs"}); err != nil || len(evs) != 1 {
			t.Errorf("journal after MakeReady without walks: %+v, %v", evs, err)
		}

		// An add that paused past its lease, and whose row a rollback took
		// over meanwhile, writes nothing when it resumes: no baseline, no
		// state, no record.
		taken := newProject("taken", quota.DefaultRange, nil)
		taken.Adder = "1.1@a/op-1"
		takenTrees, _, _ := recordAdd(t, s, taken)
		if err := s.InTx(ctx, func(tx *Tx) error {
			_, err := tx.TakeOverAdd(ctx, Project{Name: "taken", State: StateAdding, Adder: taken.Adder, CreatedAt: AsStored(taken.Created)},
				Claim{Holder: "2.2@b/op-1", Gone: func(string, HolderLease) (bool, string) { return true, "test" }})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		var late []WalkRecord
		for _, tr := range takenTrees {
			late = append(late, WalkRecord{Snapshot: Snapshot{Project: tr.Project, Area: tr.Area},
				Baseline: &WalkBaseline{Usage: quota.Usage{Bytes: 1 << 30, Inodes: 7}, Walk: WalkAt(time.Now())}})
		}
		if _, err := s.MakeReady(ctx, "taken", taken.Adder, "tester", late, journal.ProjectAdded{}); !errors.Is(err, ErrNotFound) {
			t.Errorf("MakeReady of an add taken over: %v, want not found", err)
		}
		if p, err := s.Project(ctx, "taken"); err != nil || p.State != StateAdding || p.Adder != "2.2@b/op-1" {
			t.Errorf("after the late MakeReady: %+v %v, want adding, held by the rollback", p, err)
		}
		for _, tr := range takenTrees {
			if r, err := s.Read(ctx, TreeKey{Project: tr.Project, Area: tr.Area}); err != nil || r.Used.Bytes != 0 || !r.WalkedAt.IsZero() {
				t.Errorf("%s after the late MakeReady: %+v %v, want no baseline", tr.Area, r, err)
			}
		}
		if evs, err := s.Events(ctx, EventFilter{Project: "taken", Type: journal.TypeProjectAdded}); err != nil || len(evs) != 0 {
			t.Errorf("the late MakeReady journalled %+v, %v", evs, err)
		}

		recordAdd(t, s, newProject("gone", quota.DefaultRange, nil))
		if err := s.InTx(ctx, func(tx *Tx) error { return tx.DeleteProject(ctx, "gone") }); err != nil {
			t.Fatal(err)
		}
		if _, err := s.MakeReady(ctx, "gone", "", "tester", nil, journal.ProjectAdded{}); !errors.Is(err, ErrNotFound) {
			t.Errorf("MakeReady of a project gone: %v, want not found", err)
		}
		if evs, err := s.Events(ctx, EventFilter{Project: "gone"}); err != nil || len(evs) != 0 {
			t.Errorf("MakeReady of a project gone journalled %+v, %v", evs, err)
		}
	})
}

// TakeOverAdd hands a rollback the add it saw, and only that one: the
// same state, holder and creation stamp (a holder without an operation,
// a process's name alone, adds the name again under the same holder),
// and a holder gone. It changes nothing otherwise; EndRollbackAdd then
// holds only for the rollback's own holder.
func TestTakeOverAdd(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		s := open(t, dsn)
		gone := func(string, HolderLease) (bool, string) { return true, "test" }
		live := func(string, HolderLease) (bool, string) { return false, "" }
		p := newProject("omni", quota.IDRange{First: 10, Last: 99}, nil)
		p.Adder = "1.1@a/op-1"
		recordAdd(t, s, p)
		row, err := s.Project(ctx, "omni")
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			name string
			Seen func(Project) Project
			gone Gone
		}{
			{"another holder's", func(p Project) Project { p.Adder = "2.2@a/op-1"; return p }, gone},
			{"an earlier add under the same holder", func(p Project) Project { p.CreatedAt = p.CreatedAt.Add(-time.Second); return p }, gone},
			{"a removal", func(p Project) Project { p.State = StateRemoving; return p }, gone},
			{"a live holder's", func(p Project) Project { return p }, live},
			{"an add of a name gone", func(p Project) Project { p.Name = "ghost"; return p }, gone},
		} {
			err := s.InTx(ctx, func(tx *Tx) error {
				_, err := tx.TakeOverAdd(ctx, c.Seen(row), Claim{Holder: "3.3@b/op-1", Gone: c.gone})
				return err
			})
			if !errors.Is(err, ErrAddChanged) {
				t.Errorf("rollback of %s add: %v, want ErrAddChanged", c.name, err)
			}
			if now, err := s.Project(ctx, "omni"); err != nil || now != row {
				t.Errorf("after the refused rollback of %s add: %+v %v, want %+v", c.name, now, err, row)
			}
			if n := countEvents(t, s, journal.TypeHolderTakenOver); n != 0 {
				t.Errorf("the refused rollback of %s add journalled %d takeovers", c.name, n)
			}
		}
		var trees []Tree
		err = s.InTx(ctx, func(tx *Tx) (err error) {
			trees, err = tx.TakeOverAdd(ctx, row, Claim{Holder: "3.3@b/op-1", Gone: gone})
			return err
		})
		if err != nil || len(trees) != 3 || trees[0].ProjectID == 0 {
			t.Fatalf("rollback of the add seen: %v, trees %+v", err, trees)
		}
		if now, err := s.Project(ctx, "omni"); err != nil || now.Adder != "3.3@b/op-1" || now.State != StateAdding {
			t.Errorf("taken over: %+v %v, want adding, held by the rollback", now, err)
		}
		wantTakeover(t, s, journal.HolderTakenOver{What: "add", Name: "omni", From: "1.1@a/op-1", By: "3.3@b/op-1", Why: "test"})
		for holder, want := range map[string]error{"3.3@b/op-1": nil, "1.1@a/op-1": ErrAddChanged} {
			err := s.InTx(ctx, func(tx *Tx) error { return tx.EndRollbackAdd(ctx, "omni", holder) })
			if !errors.Is(err, want) {
				t.Errorf("EndRollbackAdd by %s: %v, want %v", holder, err, want)
			}
		}
	})
}

// wantTakeover fails unless the journal holds exactly one takeover, want.
func wantTakeover(t *testing.T, s *Store, want journal.HolderTakenOver) {
	t.Helper()
	evs, err := s.Events(ctx, EventFilter{Type: journal.TypeHolderTakenOver})
	if err != nil || len(evs) != 1 {
		t.Fatalf("takeover records: %+v %v, want one", evs, err)
	}
	got, err := evs[0].Decode()
	if err != nil || got != want || evs[0].Project != want.Name {
		t.Errorf("the takeover's record: %+v (project %q) %v, want %+v", got, evs[0].Project, err, want)
	}
}

// TakeOverRemove resumes a removal left half-way only when its holder is
// gone (or its own), under the name's lock, journalling the takeover; a
// live holder's removal, or a row that is no longer a removal, it leaves
// as it is.
func TestTakeOverRemove(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		s := open(t, dsn)
		gone := func(string, HolderLease) (bool, string) { return true, "test" }
		live := func(string, HolderLease) (bool, string) { return false, "" }
		recordAdd(t, s, newProject("omni", quota.IDRange{First: 10, Last: 99}, nil))
		recordAdd(t, s, newProject("ready", quota.IDRange{First: 10, Last: 99}, nil))
		if err := s.InTx(ctx, func(tx *Tx) error { return tx.SetProjectState(ctx, "omni", StateRemoving, "1.1@a/op-1") }); err != nil {
			t.Fatal(err)
		}
		take := func(name string, c Claim) error {
			row, err := s.Project(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			return s.InTx(ctx, func(tx *Tx) error { return tx.TakeOverRemove(ctx, row, c) })
		}
		for _, c := range []struct {
			name, project string
			claim         Claim
			want          error
		}{
			{"a live holder's removal", "omni", Claim{Holder: "3.3@b/op-1", Gone: live}, ErrRemoveChanged},
			{"a project that is no removal", "ready", Claim{Holder: "3.3@b/op-1", Gone: gone}, ErrRemoveChanged},
			{"its own removal", "omni", Claim{Holder: "1.1@a/op-1", Gone: live}, nil},
		} {
			before, _ := s.Project(ctx, c.project)
			if err := take(c.project, c.claim); !errors.Is(err, c.want) {
				t.Errorf("%s: %v, want %v", c.name, err, c.want)
			}
			if now, err := s.Project(ctx, c.project); err != nil || now != before {
				t.Errorf("%s: the row is %+v %v, want it unchanged (%+v)", c.name, now, err, before)
			}
			if n := countEvents(t, s, journal.TypeHolderTakenOver); n != 0 {
				t.Errorf("%s: journalled %d takeovers", c.name, n)
			}
		}
		if err := take("omni", Claim{Holder: "3.3@b/op-1", Gone: gone}); err != nil {
			t.Fatalf("a gone holder's removal: %v", err)
		}
		if now, err := s.Project(ctx, "omni"); err != nil || now.State != StateRemoving || now.Adder != "3.3@b/op-1" {
			t.Errorf("taken over: %+v %v, want removing, held by the taker", now, err)
		}
		wantTakeover(t, s, journal.HolderTakenOver{What: "remove", Name: "omni", From: "1.1@a/op-1", By: "3.3@b/op-1", Why: "test"})
	})
}

// LockAdd reads the host's stored settings (an add's defaults) in the
// statement that takes the add's locks, and takes them: a second add of
// the name waits until the first one's transaction ends.
func TestLockAddReadsSettingsAndLocks(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		s, other := open(t, dsn), open(t, dsn)
		other.Host = "host-b"
		lockAdd := func(s *Store) (settings map[string]string) {
			t.Helper()
			if err := s.InTx(ctx, func(tx *Tx) (err error) {
				settings, err = tx.LockAdd(ctx, "p", "fs")
				return err
			}); err != nil {
				t.Fatal(err)
			}
			return settings
		}
		if got := lockAdd(s); len(got) != 0 {
			t.Errorf("no settings stored: LockAdd read %v", got)
		}
		for _, set := range []struct {
			s          *Store
			key, value string
		}{
			{s, "default_quota", "2GiB"}, {other, "default_quota", "5GiB"}, {other, "soft_grace", "1h"},
		} {
			if err := set.s.InTx(ctx, func(tx *Tx) error { _, err := tx.SetSetting(ctx, set.key, set.value); return err }); err != nil {
				t.Fatal(err)
			}
		}
		if got, want := lockAdd(s), map[string]string{"default_quota": "2GiB"}; !reflect.DeepEqual(got, want) {
			t.Errorf("LockAdd read %v, want %v (this host's only)", got, want)
		}

		again := open(t, dsn) // a pool of its own: not waiting for the first one's connection
		held, release := make(chan struct{}), make(chan struct{})
		first := make(chan error, 1)
		go func() {
			first <- s.InTx(ctx, func(tx *Tx) error {
				_, err := tx.LockAdd(ctx, "p", "fs")
				close(held)
				<-release
				return err
			})
		}()
		<-held
		second := make(chan error, 1)
		go func() {
			second <- again.InTx(ctx, func(tx *Tx) error { _, err := tx.LockAdd(ctx, "p", "fs"); return err })
		}()
		time.Sleep(200 * time.Millisecond)
		if len(second) > 0 {
			t.Errorf("a second LockAdd of the name went ahead while the first held it")
		}
		close(release)
		if err := <-first; err != nil {
			t.Fatal(err)
		}
		if err := <-second; err != nil {
			t.Fatal(err)
		}
	})
}
