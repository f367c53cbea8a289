package store

import (
	"fmt"
	"testing"
	"time"

	"github.com/xfsq/xfsq/internal/storetest"
)

// The generation a long-lived reader keeps answers by must change with
// every commit — its own pool's at once, another process's within
// GenerationLag (a second Store on
// the same database stands in for one) — and stay put while nothing is
// committed, or nothing could be kept.
func TestGenerationChangesWithEveryCommit(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		s, other := open(t, dsn), open(t, dsn)
		gen := func() Generation {
			t.Helper()
			g, err := s.Generation(ctx)
			if err != nil || !g.Known() {
				t.Fatalf("generation %+v, %v", g, err)
			}
			return g
		}
		add := func(st *Store, name string) {
			t.Helper()
			if err := st.InTx(ctx, func(tx *Tx) error {
				_, _, err := tx.InsertProject(ctx, name, "", time.Now())
				return err
			}); err != nil {
				t.Fatal(err)
			}
		}
		g0 := gen()
		if _, err := s.Projects(ctx); err != nil {
			t.Fatal(err)
		}
		// PostgreSQL's WAL position moves with any commit of the cluster
		// (another database's, autovacuum's): only SQLite's must stay put.
		if g := gen(); g != g0 && s.Driver() == "sqlite" {
			t.Errorf("a read moved the generation %+v -> %+v", g0, g)
		}
		for i, writer := range []*Store{s, other, other, s} {
			add(writer, fmt.Sprintf("p%d", i))
			if writer == other {
				// Another process's commit shows within GenerationLag;
				// this one's at once.
				time.Sleep(GenerationLag)
			}
			g := gen()
			if g == g0 {
				t.Errorf("commit %d did not move the generation from %+v", i, g0)
			}
			g0 = g
		}
	})
}
