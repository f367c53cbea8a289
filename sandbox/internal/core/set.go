package core

import (
	"context"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/sandbox/internal/core/figures"
	"github.com/xfsq/xfsq/store"
)

// Set changes the limits of one tree of a project and journals old and new.
func (m *Manager) Set(ctx context.Context, name, a string, change LimitChange) (Project, error) {
	if a == "" {
		a = area.Workspace
	}
	if err := ValidateTree(name, a); err != nil {
		return Project{}, err
	}
	if change.empty() {
		return Project{}, errkind.WithFieldHint(errkind.Input, inputErrorf("nothing to change: no limit given"),
			"give at least one of %s, %s, %s, %s", "bytes_soft", "bytes_hard", "inodes_soft", "inodes_hard")
	}
	// The tree of a ready project (or the root's inbound tree), refused
	// as Tree refuses it.
	t, err := m.Tree(ctx, name, a)
	if err != nil {
		return Project{}, err
	}
	next := change.Apply(t.Limits)
	if err := m.CheckLimits(a, next); err != nil {
		return Project{}, err
	}
	if err := m.Backend.SetLimits(t.ProjectID, next); err != nil {
		return Project{}, err
	}
	err = m.Store.InTx(ctx, func(tx *store.Tx) error {
		if err := tx.SetTreeLimits(ctx, name, a, next); err != nil {
			return err
		}
		return tx.AppendEvent(ctx, name, m.actor(ctx), journal.QuotaChanged{
			Area: a, ProjectID: uint32(t.ProjectID), Old: limitsPayload(t.Limits), New: limitsPayload(next)})
	})
	if err != nil {
		// The kernel has the new limits; put the recorded ones back so the two agree.
		m.Backend.SetLimits(t.ProjectID, t.Limits)
		return Project{}, err
	}
	p, err := m.show(ctx, name, Read{})
	p.Warnings = figures.OverLimits(p)
	return p, err
}
