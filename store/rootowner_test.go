package store

import (
	"testing"
	"time"

	"github.com/xfsq/xfsq/internal/testsupport/storetest"
	"github.com/xfsq/xfsq/quota"
)

// The RootOwner row holds the root's own trees: recorded once however
// often it is ensured, per host, never listed by Projects, while its tree
// is listed by Trees beside the projects'.
func TestRootOwnerIsNoProject(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		s := open(t, dsn)
		other, err := Open(ctx, dsn, "host-b")
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		now := time.Now()
		for range 2 { // idempotent
			if err := s.InTx(ctx, func(tx *Tx) error { return tx.EnsureRootOwner(ctx, now) }); err != nil {
				t.Fatal(err)
			}
		}
		err = s.InTx(ctx, func(tx *Tx) error {
			if err := tx.InsertTree(ctx, Tree{Project: RootOwner, Area: "inbound", Path: "inbound", Backend: "xfs", FSUUID: "u1",
				ProjectID: 100000, Limits: quota.Limits{BytesHard: 10 << 30}}); err != nil {
				return err
			}
			if _, _, err := tx.InsertProject(ctx, "omni", "", now); err != nil {
				return err
			}
			return tx.InsertTree(ctx, Tree{Project: "omni", Area: "workspace", Path: "projects/omni", Backend: "xfs", FSUUID: "u1", ProjectID: 100001})
		})
		if err != nil {
			t.Fatal(err)
		}
		ps, err := s.Projects(ctx)
		if err != nil || len(ps) != 1 || ps[0].Name != "omni" {
			t.Errorf("Projects: %+v %v, want omni alone", ps, err)
		}
		if p, err := s.Project(ctx, RootOwner); err != nil || p.State != StateReady {
			t.Errorf("the owner row: %+v %v, want it ready", p, err)
		}
		trees, err := s.Trees(ctx, "")
		if err != nil || len(trees) != 2 || trees[0].Project != RootOwner {
			t.Errorf("Trees: %+v %v, want the inbound tree beside omni's", trees, err)
		}
		if blank, err := other.Blank(ctx); err != nil || !blank {
			t.Errorf("another host: blank %v %v; the owner row is per host", blank, err)
		}
	})
}
