package store

import (
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/xfsq/xfsq/internal/testsupport/storetest"
	"github.com/xfsq/xfsq/quota"
)

// Every write that changes what a read of a project returns moves that
// project's version, and only that project's; a settings change moves the
// host-wide part; a read moves nothing. A long-lived reader keeps a
// project's answer while its version stands, so a write this table misses
// would be an admission answered from before it. The writes come through
// another Store on the same database, as another process's would.
func TestProjectVersionMovesWithEveryChangeOfTheProject(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		reader, w := open(t, dsn), open(t, dsn)
		ws := TreeKey{Project: "alpha", Area: "workspace"}
		var res int64
		tx := func(fn func(*Tx) error) func() error { return func() error { return w.InTx(ctx, fn) } }
		addProject := func(name string) func() error {
			return tx(func(tx *Tx) error {
				if _, _, err := tx.InsertProject(ctx, name, "", time.Now()); err != nil {
					return err
				}
				return tx.InsertTree(ctx, Tree{Project: name, Area: "workspace", Path: "projects/" + name, Backend: "fallback", FSUUID: "u", ProjectID: 1})
			})
		}
		if err := addProject("beta")(); err != nil {
			t.Fatal(err)
		}
		cases := []struct {
			name     string
			write    func() error
			settings bool // the host-wide part moves, not the project's
		}{
			{"insert project and tree", addProject("alpha"), false},
			{"set limits", tx(func(tx *Tx) error {
				return tx.SetTreeLimits(ctx, "alpha", "workspace", quota.Limits{BytesHard: 1 << 20})
			}), false},
			{"reserve", func() (err error) {
				res, _, err = w.Reserve(ctx, ws, 100, 1, "h", "", time.Hour, nil, admitAll)
				return err
			}, false},
			{"grow", func() error { _, err := w.Grow(ctx, ws, res, 200, time.Hour, nil, admitAll); return err }, false},
			{"renew", func() error { return w.Renew(ctx, res, 2*time.Hour) }, false},
			{"commit", func() error { return w.CommitFile(ctx, ws, res, 200, 1, 0, "test") }, false},
			{"ledger", func() error { return w.AddLedger(ctx, ws, -50, 0, "test", time.Now()) }, false},
			{"reserve again", func() (err error) {
				res, _, err = w.Reserve(ctx, ws, 10, 0, "h", "", time.Hour, nil, admitAll)
				return err
			}, false},
			{"release", func() error { return w.Release(ctx, res) }, false},
			{"baseline", func() error {
				return w.SetBaseline(ctx, ws, quota.Usage{Bytes: 4096, Inodes: 2}, WalkAt(time.Now()), WalkSeen{})
			}, false},
			{"state", tx(func(tx *Tx) error { return tx.SetProjectState(ctx, "alpha", "removing", "") }), false},
			{"delete tree", tx(func(tx *Tx) error { return tx.DeleteTree(ctx, "alpha", "workspace") }), false},
			{"delete project", tx(func(tx *Tx) error { return tx.DeleteProject(ctx, "alpha") }), false},
			{"set setting", tx(func(tx *Tx) error { _, err := tx.SetSetting(ctx, "soft_grace", "1h"); return err }), true},
			{"reset setting", tx(func(tx *Tx) error { _, err := tx.ResetSetting(ctx, "soft_grace"); return err }), true},
		}
		version := func(name string) Version {
			t.Helper()
			time.Sleep(GenerationLag) // the writer is another process
			gen, err := reader.Generation(ctx)
			if err != nil {
				t.Fatal(err)
			}
			v, err := reader.VersionAt(ctx, gen, name)
			if err != nil {
				t.Fatal(err)
			}
			all, err := reader.VersionsAt(ctx, gen)
			if err != nil {
				t.Fatal(err)
			}
			if table := tableVersions(t, reader).Of(name); all.Of(name) != v || v != table {
				t.Fatalf("%s: VersionAt says %+v, VersionsAt %+v, the table %+v", name, v, all.Of(name), table)
			}
			return v
		}
		for _, c := range cases {
			a0, b0 := version("alpha"), version("beta")
			if err := c.write(); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			a, b := version("alpha"), version("beta")
			if c.settings {
				if a.Settings == a0.Settings || b.Settings == b0.Settings || a.Project != a0.Project || b.Project != b0.Project {
					t.Errorf("%s: alpha %+v -> %+v, beta %+v -> %+v: want only the settings part moved", c.name, a0, a, b0, b)
				}
				continue
			}
			if a.Project == a0.Project {
				t.Errorf("%s: alpha's version stayed at %+v", c.name, a)
			}
			if b != b0 {
				t.Errorf("%s: beta's version moved %+v -> %+v", c.name, b0, b)
			}
		}
		// Reads move nothing.
		a0 := version("alpha")
		if _, err := reader.Read(ctx, TreeKey{Project: "beta", Area: "workspace"}); err != nil {
			t.Fatal(err)
		}
		if _, err := reader.TreeUsages(ctx); err != nil {
			t.Fatal(err)
		}
		if a := version("alpha"); a != a0 {
			t.Errorf("reads moved alpha's version %+v -> %+v", a0, a)
		}
	})
}

// tableVersions reads every project's version from the table itself, as
// the feed's answers must be.
func tableVersions(t *testing.T, s *Store) Versions {
	t.Helper()
	rows, err := s.SQL.QueryContext(ctx, s.SQL.Rebind(`SELECT project, version FROM project_versions WHERE host = ?`), s.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	v := Versions{Projects: map[string]int64{}}
	for rows.Next() {
		var name string
		var n int64
		if err := rows.Scan(&name, &n); err != nil {
			t.Fatal(err)
		}
		if name == "" {
			v.Settings = n
		} else {
			v.Projects[name] = n
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return v
}

// addProjects registers names through s, one transaction each.
func addProjects(t *testing.T, s *Store, names ...string) {
	t.Helper()
	for _, name := range names {
		if err := s.InTx(ctx, func(tx *Tx) error {
			_, _, err := tx.InsertProject(ctx, name, "", time.Now())
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
}

// The feed reads once per generation, however many projects are asked
// about under it, and only what changed: a server's thousand kept answers
// beside a pass's commits cost one read per commit.
func TestVersionFeedReadsOncePerGeneration(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		reader, w := open(t, dsn), open(t, dsn)
		names := make([]string, 50)
		for i := range names {
			names[i] = fmt.Sprintf("p%02d", i)
		}
		addProjects(t, w, names...)
		for round := range 3 {
			time.Sleep(GenerationLag)
			gen, err := reader.Generation(ctx)
			if err != nil {
				t.Fatal(err)
			}
			before := reader.VersionFollows()
			for _, name := range names {
				v, err := reader.VersionAt(ctx, gen, name)
				if err != nil {
					t.Fatal(err)
				}
				if want := tableVersions(t, reader).Of(name); v != want {
					t.Fatalf("round %d, %s: %+v, the table %+v", round, name, v, want)
				}
			}
			if n := reader.VersionFollows() - before; n != 1 {
				t.Errorf("round %d: %d reads of the changes for %d projects under one generation, want 1", round, n, len(names))
			}
			addProjects(t, w, fmt.Sprintf("q%d", round))
			if err := w.InTx(ctx, func(tx *Tx) error { return tx.SetProjectState(ctx, names[round], "removing", "") }); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// Under PostgreSQL a transaction that began writing first may commit
// last. A feed that resumed after the highest change it had seen would
// then never see the earlier one, and a kept answer of that project would
// outlive its change; the feed resumes at the oldest transaction still
// running when it read.
// (SQLite commits one writing transaction at a time: it has no such
// order to cross.)
func TestVersionFeedSeesAnEarlierTransactionCommittingLater(t *testing.T) {
	dsn := storetest.Postgres(t)
	reader, w := open(t, dsn), open(t, dsn)
	addProjects(t, w, "early", "late")
	seen := func() Versions {
		t.Helper()
		v, err := reader.VersionsAt(ctx, Generation{}) // unknown: always reads
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	seen()
	wrote, commit, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- w.InTx(ctx, func(tx *Tx) error {
			if err := tx.SetProjectState(ctx, "early", "removing", ""); err != nil {
				return err
			}
			close(wrote)
			<-commit
			return nil
		})
	}()
	<-wrote
	early := seen().Projects["early"]
	if err := w.InTx(ctx, func(tx *Tx) error { return tx.SetProjectState(ctx, "late", "removing", "") }); err != nil {
		t.Fatal(err)
	}
	if v := seen(); v.Projects["late"] != tableVersions(t, reader).Projects["late"] {
		t.Fatalf("the later transaction's change not seen: %+v", v)
	}
	close(commit)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got, want := seen().Projects["early"], tableVersions(t, reader).Projects["early"]
	if got != want || got == early {
		t.Errorf("the earlier transaction, committed last: the feed says version %d, the table %d (before: %d)", got, want, early)
	}
}

// A database migrated from 11, whose rows carry no change stamp yet, is
// read whole at first and followed from there.
func TestVersionFeedAcrossMigration12(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		old := openAtVersion(t, dsn, 11)
		addProjects(t, old, "omni", "beta")
		old.Close()
		s := open(t, dsn)
		v, err := s.VersionsAt(ctx, Generation{})
		if err != nil {
			t.Fatal(err)
		}
		if want := tableVersions(t, s); !maps.Equal(v.Projects, want.Projects) || len(v.Projects) != 2 {
			t.Fatalf("after migration 12: %+v, the table %+v", v, want)
		}
		if err := s.InTx(ctx, func(tx *Tx) error { return tx.SetProjectState(ctx, "omni", "removing", "") }); err != nil {
			t.Fatal(err)
		}
		v2, err := s.VersionsAt(ctx, Generation{})
		if err != nil {
			t.Fatal(err)
		}
		if v2.Projects["omni"] == v.Projects["omni"] || v2.Projects["beta"] != v.Projects["beta"] {
			t.Errorf("after a change of omni: %+v, before %+v", v2, v)
		}
	})
}
