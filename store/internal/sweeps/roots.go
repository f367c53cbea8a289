package sweeps

import (
	"context"
	"strings"
	"time"

	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/store/internal/base"
)

// A host name in a shared store is bound to one root: its identity (a
// random id the root keeps in .xfsq/) and its filesystem's. Rows scoped by
// host (projects, trees, the journal's pending deletions) describe that
// root's disk; another root acting under the name would overwrite them
// with its own tree, or settle deletions that happened on another disk.

// RootBinding is the root a host name is bound to.
type RootBinding struct {
	Host    string    `db:"host"`
	RootID  string    `db:"root_id"`
	FSID    string    `db:"fs_id"` // "" when the filesystem has no identity to read
	Path    string    `db:"path"`
	BoundAt time.Time `db:"-"`
	At      int64     `db:"bound_at"`
}

// Bindings reads the binding of this host name and the one of rootID (the
// same row when the root is bound to this host); ok false when there is none.
func (s *Store) Bindings(ctx context.Context, rootID string) (host, root RootBinding, hostOK, rootOK bool, err error) {
	var rows []RootBinding
	if err := s.Sel(ctx, &rows, `SELECT host, root_id, fs_id, path, bound_at FROM roots WHERE host = ? OR root_id = ?`, s.Host, rootID); err != nil {
		return host, root, false, false, err
	}
	for _, r := range rows {
		r.BoundAt = base.FromMicros(r.At)
		if r.Host == s.Host {
			host, hostOK = r, true
		}
		if r.RootID == rootID {
			root, rootOK = r, true
		}
	}
	return host, root, hostOK, rootOK, nil
}

// BindConflict is a binding refused: the host name is held by another
// root (Held), or the root is bound to another host name (Bound).
type BindConflict struct {
	Held  *RootBinding // the host name's binding, when another root has it
	Bound *RootBinding // the root's binding, when it is to another host
}

func (c *BindConflict) Error() string { return "the host name or the root is bound elsewhere" }

// Bind binds this host name to root b (RootID, FSID, Path), journalling
// why with actor, unless the name is held by another root identity (or the
// same identity on another filesystem: a copy), or the root is bound to
// another name: then it returns a *BindConflict and changes nothing.
// takeOver lets it replace another root's hold of the name (journalled,
// with the root it replaced); never a root's binding to another name: a
// root serves one host. fallbackKey, on a fallback root, is the root's key
// in the ID registry: this host's fallback IDs are copied to it (keeping
// the rows under older keys) and its trees rekeyed, so that the host's
// sequence follows the root it is bound to. A binding already as asked
// changes nothing.
func (s *Store) Bind(ctx context.Context, b RootBinding, why, actor, fallbackKey string, takeOver bool) error {
	return s.InTx(ctx, func(tx *Tx) error {
		if err := tx.Lock(ctx, "roots"); err != nil {
			return err
		}
		var rows []RootBinding
		if err := tx.Sel(ctx, &rows, `SELECT host, root_id, fs_id, path, bound_at FROM roots WHERE host = ? OR root_id = ?`, s.Host, b.RootID); err != nil {
			return err
		}
		var held *RootBinding
		for i := range rows {
			r := &rows[i]
			r.BoundAt = base.FromMicros(r.At)
			if r.RootID == b.RootID && r.Host != s.Host {
				return &BindConflict{Bound: r}
			}
			if r.Host == s.Host {
				held = r
			}
		}
		if held != nil && held.RootID == b.RootID && b.FSID == "" {
			b.FSID = held.FSID // unreadable now: nothing says it changed
		}
		ev := journal.RootBound{Root: b.Path, RootID: b.RootID, FSID: b.FSID, Why: why}
		switch {
		case held == nil:
			if _, err := tx.Exec(ctx, `INSERT INTO roots (host, root_id, fs_id, path, bound_at) VALUES (?, ?, ?, ?, ?)`,
				s.Host, b.RootID, b.FSID, b.Path, base.ToMicros(time.Now())); err != nil {
				return err
			}
		case held.RootID == b.RootID && sameFS(held.FSID, b.FSID):
			if held.FSID == b.FSID && held.Path == b.Path {
				return nil
			}
			// The root moved (a new mount point), or its filesystem's
			// identity is read for the first time: the same root.
			_, err := tx.Exec(ctx, `UPDATE roots SET fs_id = ?, path = ? WHERE host = ?`, b.FSID, b.Path, s.Host)
			return err
		case !takeOver:
			return &BindConflict{Held: held}
		default:
			ev.Why = "takeover"
			ev.TookFrom = &journal.BoundRoot{Root: held.Path, RootID: held.RootID, FSID: held.FSID}
			if _, err := tx.Exec(ctx, `UPDATE roots SET root_id = ?, fs_id = ?, path = ?, bound_at = ? WHERE host = ?`,
				b.RootID, b.FSID, b.Path, base.ToMicros(time.Now()), s.Host); err != nil {
				return err
			}
		}
		if fallbackKey != "" {
			if err := tx.rekeyFallback(ctx, fallbackKey); err != nil {
				return err
			}
		}
		return tx.AppendEvent(ctx, "", actor, ev)
	})
}

// rekeyFallback makes key this host's only fallback key: every fallback ID
// the host registered under another key (a root path, before roots had
// identities; a root it took the name over from) is registered under key
// too, and its trees name key.
func (t *Tx) rekeyFallback(ctx context.Context, key string) error {
	if _, err := t.Exec(ctx, `INSERT INTO id_registry (host, fs_key, project_id, owner, created_at)
		SELECT host, ?, project_id, owner, created_at FROM id_registry
		WHERE host = ? AND fs_key LIKE 'fallback:%' AND fs_key <> ?
		ON CONFLICT (host, fs_key, project_id) DO NOTHING`, key, t.s.Host, key); err != nil {
		return err
	}
	_, err := t.Exec(ctx, `UPDATE trees SET fs_uuid = ? WHERE host = ? AND fs_uuid LIKE 'fallback:%' AND fs_uuid <> ?`, key, t.s.Host, key)
	return err
}

// sameFS reports whether two filesystem identities may name one
// filesystem: equal, or not comparable (one unknown, or read in two ways:
// the kernel backend's UUID, the fallback's statfs id).
func sameFS(a, b string) bool {
	ka, _, _ := strings.Cut(a, ":")
	kb, _, _ := strings.Cut(b, ":")
	return a == b || a == "" || b == "" || ka != kb
}
