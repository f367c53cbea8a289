package writes

import (
	"context"
	"time"

	"github.com/xfsq/xfsq/files"
	"github.com/xfsq/xfsq/internal/deletion"
	"github.com/xfsq/xfsq/internal/saferm"
	"github.com/xfsq/xfsq/inventory"
	"github.com/xfsq/xfsq/quota"
	"github.com/xfsq/xfsq/sandbox/internal/core"
	"github.com/xfsq/xfsq/store"
)

// Files is the file layer of the root, for listing, reading and removing;
// Layer.ForWrites gives it the write settings in force for a write. The
// layer works through the core and this accounting (files.Core): a shell
// reaches files only from the facade, never by composing a layer over the
// core.
func (m *Writes) Files() *files.Layer { return files.ForReads(fileCore{m}) }

// fileCore is the core and its accounting of writes as the file layer
// needs them (files.Core).
type fileCore struct{ m *Writes }

func (c fileCore) Dir() string { return c.m.Root }

func (c fileCore) Tree(ctx context.Context, project, area string) (files.Tree, error) {
	t, err := c.m.Tree(ctx, project, area)
	if err != nil {
		return files.Tree{}, err
	}
	return files.Tree{Project: t.Project, Area: t.Area, Path: t.Path, Accounting: treeAccounting{c.m, t}}, nil
}

func (c fileCore) WriteSettings(ctx context.Context) (files.WriteSettings, error) {
	return c.m.WriteSettings(ctx)
}

func (c fileCore) BeginOp(ctx context.Context) (context.Context, func()) { return core.BeginOp(ctx) }

func (c fileCore) RemoveJournalled(ctx context.Context, project string, parent *saferm.Dir, name string, rec deletion.Record, o saferm.Options) (deletion.Record, saferm.Report, error) {
	return c.m.RemoveJournalled(ctx, project, parent, name, rec, o)
}

func (c fileCore) Top(ctx context.Context, project, area string, opts inventory.Options) (*inventory.Result, error) {
	return c.m.Top(ctx, project, area, opts)
}

// treeAccounting is the account of one tree (files.Accounting).
type treeAccounting struct {
	m *Writes
	t store.Tree
}

func (a treeAccounting) StartWrite(label string, limits files.WriteLimits, inodes, names uint64, temp string) files.Write {
	return a.m.StartWrite(a.t, label, limits, inodes, names, temp)
}

func (a treeAccounting) RemovalCutoff(ctx context.Context) (time.Time, error) {
	return a.m.RemovalCutoff(ctx, a.t)
}

func (a treeAccounting) CreditRemoval(ctx context.Context, freed quota.Usage, uncounted []saferm.Freed, started time.Time) error {
	return a.m.CreditRemoval(ctx, a.t, freed, uncounted, started)
}

func (a treeAccounting) WalkProgress(report func(inventory.TreeProgress)) func(inventory.Progress) {
	return a.m.WalkProgress(a.t, report)
}

func (a treeAccounting) WalkIn(rel string, opts inventory.Options) (*inventory.Result, error) {
	return a.m.WalkIn(a.t, rel, opts)
}
