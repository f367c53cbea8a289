package core

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/xfsq/xfsq/area"

	"github.com/xfsq/xfsq/quota"
	"github.com/xfsq/xfsq/store"
)

// managerWithOmni initialises a fallback root with one project, omni,
// and returns its manager and store, closed when t ends.
func managerWithOmni(t *testing.T, root string) (*Manager, *store.Store) {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(root, StateDir, "xfsq.db"), "host-a")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	m, _, err := Init(ctx, Options{Root: root, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	plant(t, m, "omni")
	return m, st
}

// plant makes project name ready as project add would, with the core's own
// tree-making: every area's tree with its default limits and, on the
// fallback, its walk as baseline. (The core's tests cannot call project
// add, which sandbox/internal/lifecycle owns: it imports the core.)
func plant(t testing.TB, m *Manager, name string) {
	t.Helper()
	ctx := context.Background()
	limits := map[string]quota.Limits{}
	for _, a := range area.OfProject {
		l, err := m.defaultLimits(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		limits[a] = l
	}
	excluded, err := m.ExcludedIDs()
	if err != nil {
		t.Fatal(err)
	}
	var trees []store.Tree
	if err := m.Store.InTx(ctx, func(tx *store.Tx) error {
		byArea := func(StoredSettings) (map[string]quota.Limits, error) { return limits, nil }
		trees, _, _, err = m.RecordProject(ctx, tx, name, HolderOf(ctx), m.now(), byArea, excluded)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var walks []store.WalkRecord
	for _, tree := range trees {
		if err := m.PlaceTree(tree); err != nil {
			t.Fatal(err)
		}
	}
	if !m.IsXFS() {
		if walks, err = m.MeasureNew(trees...); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Store.InTx(ctx, func(tx *store.Tx) error {
		if err := tx.SetBaselines(ctx, walks); err != nil {
			return err
		}
		return tx.SetProjectState(ctx, name, store.StateReady, "")
	}); err != nil {
		t.Fatal(err)
	}
}
