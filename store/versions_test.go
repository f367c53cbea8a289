package store

import (
	"testing"
	"time"

	"github.com/xfsq/xfsq/internal/storetest"
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
			{"commit", func() error { return w.Commit(ctx, ws, res, 200, 1, "test") }, false},
			{"ledger", func() error { return w.AddLedger(ctx, ws, -50, 0, "test", time.Now()) }, false},
			{"reserve again", func() (err error) {
				res, _, err = w.Reserve(ctx, ws, 10, 0, "h", "", time.Hour, nil, admitAll)
				return err
			}, false},
			{"release", func() error { return w.Release(ctx, res) }, false},
			{"baseline", func() error {
				return w.SetBaseline(ctx, ws, quota.Usage{Bytes: 4096, Inodes: 2}, WalkAt(time.Now()), false)
			}, false},
			{"state", tx(func(tx *Tx) error { return tx.SetProjectState(ctx, "alpha", "removing", "") }), false},
			{"delete tree", tx(func(tx *Tx) error { return tx.DeleteTree(ctx, "alpha", "workspace") }), false},
			{"delete project", tx(func(tx *Tx) error { return tx.DeleteProject(ctx, "alpha") }), false},
			{"set setting", tx(func(tx *Tx) error { _, err := tx.SetSetting(ctx, "soft_grace", "1h"); return err }), true},
			{"reset setting", tx(func(tx *Tx) error { _, err := tx.ResetSetting(ctx, "soft_grace"); return err }), true},
		}
		version := func(name string) Version {
			t.Helper()
			v, err := reader.ProjectVersion(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			all, err := reader.ProjectVersions(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if all.Of(name) != v {
				t.Fatalf("%s: ProjectVersions says %+v, ProjectVersion %+v", name, all.Of(name), v)
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
