package project

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"

	"github.com/xfsq/xfsq/store"
	"github.com/xfsq/xfsq/sweep"
)

// Set changes the limits of one tree of a project and journals old and new.
func (m *Manager) Set(ctx context.Context, name, area string, change LimitChange) (Project, error) {
	if err := ValidateName(name); err != nil {
		return Project{}, err
	}
	if area == "" {
		area = AreaWorkspace
	}
	if err := ValidateArea(area); err != nil {
		return Project{}, err
	}
	if change.empty() {
		return Project{}, inputErrorf("nothing to change: give at least one of --bytes-soft, --bytes-hard, --inodes-soft, --inodes-hard")
	}
	p, err := m.Store.Project(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return Project{}, notFound(name)
	}
	if err != nil {
		return Project{}, err
	}
	if p.State != store.StateReady {
		return Project{}, fmt.Errorf("project %q is %s, not ready: run xfsq doctor --fix first", name, p.State)
	}
	trees, err := m.Store.Trees(ctx, name)
	if err != nil {
		return Project{}, err
	}
	for _, t := range trees {
		if t.Area != area {
			continue
		}
		next := change.apply(t.Limits)
		if err := validateLimits(area, next); err != nil {
			return Project{}, err
		}
		if err := m.Backend.SetLimits(t.ProjectID, next); err != nil {
			return Project{}, err
		}
		err := m.Store.InTx(ctx, func(tx *store.Tx) error {
			if err := tx.SetTreeLimits(ctx, name, area, next); err != nil {
				return err
			}
			return tx.AppendEvent(ctx, store.EventQuotaChanged, name, m.Actor,
				map[string]any{"area": area, "project_id": t.ProjectID, "old": t.Limits, "new": next})
		})
		if err != nil {
			// The kernel has the new limits; put the recorded ones back so the two agree.
			m.Backend.SetLimits(t.ProjectID, t.Limits)
			return Project{}, err
		}
		return m.Show(ctx, name)
	}
	return Project{}, fmt.Errorf("project %q has no %s tree: run xfsq doctor", name, area)
}

// RemoveResult says what a removal did.
type RemoveResult struct {
	Project string `json:"project"`
	Purged  bool   `json:"purged"`
	// KeptIDs are IDs still carried by files left on disk: reserved until
	// those files are gone, so no other project is charged for them.
	KeptIDs []string `json:"kept_ids"`
	Left    []string `json:"left"` // trees left on disk (without --purge)
}

// Remove unregisters a project: limits cleared, rows deleted, IDs released
// once no file carries them. With purge its trees are deleted too, each
// deletion journalled (storage.evicted) before and after.
func (m *Manager) Remove(ctx context.Context, name string, purge bool) (RemoveResult, error) {
	ctx, end := BeginOp(ctx)
	defer end()
	res := RemoveResult{Project: name, Purged: purge, KeptIDs: []string{}, Left: []string{}}
	if err := ValidateName(name); err != nil {
		return res, err
	}
	p, err := m.Store.Project(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return res, notFound(name)
	}
	if err != nil {
		return res, err
	}
	if p.State == store.StateAdding {
		if holderAlive(p.Adder) {
			return res, fmt.Errorf("project %q is being added by another process (%s); wait for it", name, p.Adder)
		}
		res.Left, err = m.rollbackAdd(ctx, name)
		return res, err
	}
	if p.State == store.StateRemoving && holderAlive(p.Adder) {
		return res, fmt.Errorf("project %q is being removed by another process (%s); wait for it", name, p.Adder)
	}
	if err := m.Store.InTx(ctx, func(tx *store.Tx) error { return tx.SetProjectState(ctx, name, store.StateRemoving, HolderOf(ctx)) }); err != nil {
		return res, err
	}
	trees, err := m.Store.Trees(ctx, name)
	if err != nil {
		return res, err
	}
	for _, t := range trees {
		if err := m.Backend.Clear(t.ProjectID); err != nil {
			return res, err
		}
		if purge {
			if err := m.purgeTree(ctx, t); err != nil {
				return res, err
			}
		} else if _, err := os.Lstat(m.abs(t.Path)); err == nil {
			res.Left = append(res.Left, t.Path)
		}
	}
	used, err := m.idsStillUsed(trees)
	if err != nil {
		return res, err
	}
	err = m.Store.InTx(ctx, func(tx *store.Tx) error {
		for _, t := range trees {
			if used[t.ProjectID] {
				res.KeptIDs = append(res.KeptIDs, fmt.Sprintf("%d (%s)", t.ProjectID, t.Path))
			}
			if err := releaseOrKeep(ctx, tx, t, used[t.ProjectID], "removed:"+name+"/"+t.Area); err != nil {
				return err
			}
		}
		if err := tx.DeleteProject(ctx, name); err != nil {
			return err
		}
		return tx.AppendEvent(ctx, store.EventProjectRemoved, name, m.Actor, res)
	})
	return res, err
}

// purgeTree deletes one tree inside the root, journalled.
func (m *Manager) purgeTree(ctx context.Context, t store.Tree) error {
	q, _ := m.Backend.Get(t.ProjectID)
	root, err := os.OpenRoot(m.Root)
	if err != nil {
		return err
	}
	defer root.Close()
	rec := sweep.Record{Area: t.Area, Path: t.Path, Bytes: q.Bytes, Reason: "purge", Policy: "project rm --purge"}
	if err := m.RemoveJournalled(ctx, t.Project, root, t.Path, rec); err != nil {
		return fmt.Errorf("purge %s: %w", t.Path, err)
	}
	return nil
}

// RemoveJournalled deletes rel under root and everything below it, with
// the storage.evicted records every deletion has: pending before, done or
// failed after. os.Root confines the deletion: a symlink planted in the
// tree is removed, never followed. rec says what goes and why; its state
// and holder are filled in here.
func (m *Manager) RemoveJournalled(ctx context.Context, project string, root *os.Root, rel string, rec sweep.Record) error {
	ctx, end := BeginOp(ctx)
	defer end()
	rec.Holder = HolderOf(ctx)
	rec.State = "pending"
	if rec.SweepID == "" && rec.DeletionID == "" {
		rec.DeletionID = newDeletionID()
	}
	if err := m.journalEviction(ctx, project, rec); err != nil {
		return err
	}
	rmErr := root.RemoveAll(rel)
	rec.State = "done"
	if rmErr != nil {
		rec.State, rec.Error = "failed", rmErr.Error()
	}
	if err := m.journalEviction(ctx, project, rec); err != nil {
		return err
	}
	return rmErr
}

// journalEviction appends one storage.evicted record: a sweep.Record, or a
// record read back from the journal (a map) and settled.
func (m *Manager) journalEviction(ctx context.Context, project string, rec any) error {
	return m.Store.InTx(ctx, func(tx *store.Tx) error {
		return tx.AppendEvent(ctx, store.EventEvicted, project, m.Actor, rec)
	})
}

// newDeletionID names one deletion outside a sweep (see sweep.Record).
func newDeletionID() string {
	b := make([]byte, 8)
	rand.Read(b)
	return "rm-" + hex.EncodeToString(b)
}
