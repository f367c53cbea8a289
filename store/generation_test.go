package store

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/xfsq/xfsq/internal/testsupport/storetest"
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

// Under PostgreSQL another process's commit must show in the next reads
// once the generation has moved, however the probes fall against it:
// readers hammering the probe while commits land one at a time on a quiet
// cluster. A token that moved before the commit was visible (the WAL insert
// position does) let a probe in that window keep the old answer under the
// new token until the cluster next wrote WAL, seconds later.
func TestPostgresGenerationSeesEveryCommitOfAnotherProcess(t *testing.T) {
	dsn := storetest.Postgres(t)
	reader, w := open(t, dsn), open(t, dsn)
	addProjects(t, w, "omni")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if g, err := reader.Generation(ctx); err == nil {
					reader.VersionAt(ctx, g, "omni")
				}
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()
	state := []string{"ready", "removing"}
	for round := range 60 {
		if err := w.InTx(ctx, func(tx *Tx) error { return tx.SetProjectState(ctx, "omni", state[round%2], "") }); err != nil {
			t.Fatal(err)
		}
		want := tableVersions(t, w).Of("omni")
		deadline := time.Now().Add(time.Second)
		for {
			g, err := reader.Generation(ctx)
			if err != nil {
				t.Fatal(err)
			}
			v, err := reader.VersionAt(ctx, g, "omni")
			if err != nil {
				t.Fatal(err)
			}
			if v == want {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: another process's commit not seen a second later: version %+v, the table %+v", round, v, want)
			}
			time.Sleep(time.Millisecond)
		}
	}
}
