package files

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/internal/saferm"
	"github.com/xfsq/xfsq/inventory"
)

// TopResult is what fills a tree, or a directory inside it, as `xfsq top`
// and the API show it: named by its project, area, path and walk time as a
// snapshot is.
type TopResult struct {
	Project  string    `json:"project"`
	Area     string    `json:"area"`
	Path     string    `json:"path"` // walked, relative to the tree; "." is the tree
	WalkedAt time.Time `json:"walked_at"`
	// Root holds the totals of Path and its largest subdirectories, to the
	// depth asked; their paths are relative to Path.
	Root     *inventory.Node  `json:"root"`
	TopFiles []inventory.File `json:"top_files"`
	Partial  bool             `json:"partial"`
	// UnreadableEntries could not be read or vanished during the walk.
	UnreadableEntries uint64  `json:"unreadable_entries"`
	DurationSeconds   float64 `json:"duration_seconds"`
}

// Top walks a tree, or the directory p inside it, for what fills it. p is
// cleaned like every path of the layer and checked as the layer resolves
// one (no "..", no symlink out of the tree, no other mount), then
// walked beneath the tenant's mounts through no symlink at all. progress,
// if set, is called with the walk's running totals.
func (l *Layer) Top(ctx context.Context, name, area, p string, opts inventory.Options, progress func(inventory.TreeProgress)) (TopResult, error) {
	p, err := Clean(p)
	if err != nil {
		return TopResult{}, err
	}
	t, err := l.open(ctx, name, area)
	if err != nil {
		return TopResult{}, err
	}
	defer t.Close()
	opts.Progress = t.WalkProgress(progress)
	out := TopResult{Project: t.Project, Area: t.Area, Path: p, WalkedAt: time.Now().UTC()}
	var res *inventory.Result
	if p == "." {
		// The whole tree: the manager's walk, which knows what else a walk
		// of a tree is good for.
		res, err = l.m.Top(ctx, name, t.Area, opts)
	} else {
		res, err = l.walkIn(t, p, opts)
	}
	if err != nil {
		return TopResult{}, err
	}
	out.Root, out.TopFiles, out.Partial, out.UnreadableEntries = res.Root, res.TopFiles, res.Partial, res.Errors
	out.DurationSeconds = res.Duration.Seconds()
	if out.TopFiles == nil {
		out.TopFiles = []inventory.File{}
	}
	return out, nil
}

// walkIn walks the directory p of an opened tree.
func (l *Layer) walkIn(t *tree, p string, opts inventory.Options) (*inventory.Result, error) {
	if opts.Depth < 1 || opts.Depth > inventory.MaxDepth {
		return nil, errkind.New(errkind.Input, fmt.Errorf("depth %d: use 1 to %d", opts.Depth, inventory.MaxDepth))
	}
	f, err := t.openDir(p)
	if errors.Is(err, unix.ENOTDIR) {
		return nil, &PathError{Path: p, Reason: "it is not a directory; name a directory of the tree"}
	}
	if err != nil {
		return nil, pathErr(p, err)
	}
	defer f.Close()
	if t.dir.OtherMountFd(int(f.Fd())) {
		return nil, otherMount(p)
	}
	// Checked here, walked by the manager beneath the tenant's mounts: a
	// bind mount inside p must not list another tree's names.
	res, err := t.WalkIn(p, opts)
	if errors.Is(err, saferm.ErrUnsafe) {
		return nil, &PathError{Path: p, Reason: "it goes through a symlink or a mount, which walks never follow"}
	}
	return res, err
}
