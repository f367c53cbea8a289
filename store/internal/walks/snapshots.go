package walks

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/xfsq/xfsq/store/internal/base"
)

// Snapshot is the totals of one walk of one tree.
type Snapshot struct {
	Project       string    `json:"project" db:"project"`
	Area          string    `json:"area" db:"area"`
	At            time.Time `json:"at" db:"-"`
	SizeBytes     uint64    `json:"size_bytes" db:"size_bytes"`
	ApparentBytes uint64    `json:"apparent_bytes" db:"apparent_bytes"`
	Files         uint64    `json:"files" db:"files"`
	Dirs          uint64    `json:"dirs" db:"dirs"`
	Mtime         time.Time `json:"mtime" db:"-"`
	Partial       bool      `json:"partial" db:"partial"`
	Errors        uint64    `json:"errors" db:"errors"`
	// KernelBytes is the kernel's count for the tree's project ID read right
	// after the walk (XFS), or -1.
	KernelBytes int64 `json:"kernel_bytes" db:"kernel_bytes"`

	AtMicros    int64 `json:"-" db:"at"`
	MtimeMicros int64 `json:"-" db:"mtime"`
}

// AddSnapshot stores a walk's totals and its full tree (inventory's stored
// form: the store only keeps the bytes), replacing the previous full tree
// of the same tree, and drops the tree's totals older than retention
// before s.At. The tree is replaced in place, so that SQLite writes only
// the pages that changed: an idle project's tree, unchanged, costs a few
// pages instead of all of its ~25.
func (t *Tx) AddSnapshot(ctx context.Context, s Snapshot, tree []byte, retention time.Duration) error {
	if _, err := t.Exec(ctx, `INSERT INTO snapshots (host, project, area, at, size_bytes, apparent_bytes, files, dirs, mtime, partial, errors, kernel_bytes)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, t.s.Host, s.Project, s.Area, base.ToMicros(s.At), int64(s.SizeBytes), int64(s.ApparentBytes),
		int64(s.Files), int64(s.Dirs), base.ToMicros(s.Mtime), s.Partial, int64(s.Errors), s.KernelBytes); err != nil {
		return err
	}
	if _, err := t.Exec(ctx, `DELETE FROM snapshots WHERE host = ? AND project = ? AND area = ? AND at < ?`,
		t.s.Host, s.Project, s.Area, base.ToMicros(s.At.Add(-retention))); err != nil {
		return err
	}
	_, err := t.Exec(ctx, `INSERT INTO snapshot_trees (host, project, area, at, tree) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (host, project, area) DO UPDATE SET at = excluded.at, tree = excluded.tree`,
		t.s.Host, s.Project, s.Area, base.ToMicros(s.At), tree)
	if err != nil {
		return err
	}
	return t.keepHistory(ctx, s, tree)
}

const snapshotCols = `project, area, at, size_bytes, apparent_bytes, files, dirs, mtime, partial, errors, kernel_bytes`

func (s *Snapshot) fill() {
	s.At, s.Mtime = base.FromMicros(s.AtMicros), base.FromMicros(s.MtimeMicros)
}

// LatestSnapshot reads the totals of a tree's newest snapshot, complete or
// partial. It does not read the full tree (~200 KB at most for usual
// names): LatestTree does, for whoever shows it.
func (s *Store) LatestSnapshot(ctx context.Context, k base.TreeKey) (Snapshot, bool, error) {
	return s.latestSnapshot(ctx, k, "")
}

// LatestCompleteSnapshot reads the totals of a tree's newest snapshot whose
// walk saw the whole tree: a partial one (its budget ran out) counted only
// part of it, so its totals measure nothing that grows.
func (s *Store) LatestCompleteSnapshot(ctx context.Context, k base.TreeKey) (Snapshot, bool, error) {
	return s.latestSnapshot(ctx, k, ` AND NOT partial`)
}

func (s *Store) latestSnapshot(ctx context.Context, k base.TreeKey, and string) (Snapshot, bool, error) {
	var snap Snapshot
	err := s.Get(ctx, &snap, `SELECT `+snapshotCols+` FROM snapshots WHERE host = ? AND project = ? AND area = ?`+and+` ORDER BY at DESC, id DESC LIMIT 1`,
		s.Host, k.Project, k.Area)
	if errors.Is(err, sql.ErrNoRows) {
		return Snapshot{}, false, nil
	}
	if err != nil {
		return Snapshot{}, false, err
	}
	snap.fill()
	return snap, true, nil
}

// LatestTree reads the full tree kept of a tree's newest snapshot, as
// AddSnapshot was given it (inventory.ParseStored reads it); nil if there is
// none.
func (s *Store) LatestTree(ctx context.Context, k base.TreeKey) ([]byte, error) {
	var tree []byte
	err := s.Get(ctx, &tree, `SELECT tree FROM snapshot_trees WHERE host = ? AND project = ? AND area = ?`, s.Host, k.Project, k.Area)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return tree, err
}

// Growth is the change of a tree's allocated bytes over window, between
// complete walks: its latest complete snapshot minus the newest complete
// one taken at or before (latest − window). ok is false until a snapshot
// that old exists. Partial snapshots are left out on both ends: the bytes
// they did not reach would count as shrinkage, or as growth.
func (s *Store) Growth(ctx context.Context, k base.TreeKey, window time.Duration) (delta int64, ok bool, err error) {
	latest, found, err := s.LatestCompleteSnapshot(ctx, k)
	if err != nil || !found {
		return 0, false, err
	}
	return s.GrowthTo(ctx, latest, window)
}

// GrowthTo is Growth for a caller that has read the latest complete
// snapshot already (report reads it once for both windows); ok is false
// for a partial one.
func (s *Store) GrowthTo(ctx context.Context, latest Snapshot, window time.Duration) (delta int64, ok bool, err error) {
	if latest.Partial {
		return 0, false, nil
	}
	var before Snapshot
	err = s.Get(ctx, &before, `SELECT `+snapshotCols+` FROM snapshots WHERE host = ? AND project = ? AND area = ? AND at <= ? AND NOT partial ORDER BY at DESC, id DESC LIMIT 1`,
		s.Host, latest.Project, latest.Area, base.ToMicros(latest.At.Add(-window)))
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	return int64(latest.SizeBytes) - int64(before.SizeBytes), true, nil
}
