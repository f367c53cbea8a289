// Package coretest is what the tests of the use-case packages beside the
// core (retention, doctor, readmodel) share: a core over a real store on a
// temporary root, its projects added and leased as project add and lease
// acquire do (by sandbox/internal/lifecycle, which a use case's own code
// never imports). Tests only; no library or shell imports it. (The core's
// own tests keep their copy: a package's internal tests cannot import a
// package that imports it.)
package coretest

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/xfsq/xfsq/sandbox/internal/core"
	"github.com/xfsq/xfsq/sandbox/internal/lifecycle"
	"github.com/xfsq/xfsq/store"
)

// Omni initialises a fallback root with one project, omni, and returns its
// manager and store, closed when t ends.
func Omni(t testing.TB, root string) (*core.Manager, *store.Store) {
	t.Helper()
	return OmniOn(t, root, filepath.Join(root, core.StateDir, "xfsq.db"))
}

// OmniOn is Omni on the store dsn names (storetest.Drivers).
func OmniOn(t testing.TB, root, dsn string) (*core.Manager, *store.Store) {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, dsn, "host-a")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	m, _, err := core.Init(ctx, core.Options{Root: root, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	if err := Add(ctx, m, "omni", core.LimitChange{}); err != nil {
		t.Fatal(err)
	}
	return m, st
}

// Add adds project name to m's root as project add does, its workspace
// with the limits ws sets and the other areas with their defaults.
func Add(ctx context.Context, m *core.Manager, name string, ws core.LimitChange) error {
	_, err := lifecycle.New(m).Add(ctx, name, lifecycle.AddOptions{Workspace: ws})
	return err
}

// AcquireLease takes run's lease on project for ttl, as lease acquire does.
func AcquireLease(ctx context.Context, m *core.Manager, project, run string, ttl time.Duration) error {
	_, err := lifecycle.New(m).AcquireLease(ctx, project, run, ttl)
	return err
}

// RollbackAdd is the rollback of an add left half-way, as project add,
// project rm and doctor --fix call it (doctor.Projects.RollbackAdd).
func RollbackAdd(m *core.Manager) func(ctx context.Context, seen store.Project) ([]string, error) {
	return lifecycle.New(m).RollbackAdd
}
