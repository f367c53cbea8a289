package core

import (
	"context"
	"errors"
	"os"
	"path"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/files"
	"github.com/xfsq/xfsq/internal/deletion"
	"github.com/xfsq/xfsq/internal/saferm"
	"github.com/xfsq/xfsq/quota"
	"github.com/xfsq/xfsq/store"
)

// HolderGone reports whether a reservation's holder (pid.start@host/op-N),
// whose process holds the lease l, is known to have stopped: as a lock's
// holder is (holderGone: an operation of this process that ended; a
// process of this machine, by its kernel; one of another machine, or of a
// container in a pid namespace of its own, by its lease), except that a
// holder with no lease on another hostname (an older xfsq's) is left to
// the reservation's expiry: a write's room is never taken from a writer
// that may still run.
func HolderGone(h string, l store.HolderLease) bool {
	if !l.Found && !onThisHostname(store.ProcessOf(h)) && store.ProcessOf(h) != processHolder() {
		return false
	}
	gone, _ := holderGone(h, l)
	return gone
}

// TempPrefix starts the name of every temporary file of package files
// (files.TempPrefix): what a reclaim or doctor --fix may delete.
const TempPrefix = files.TempPrefix

// RemoveTemps deletes the temporary files named by reclaimed reservations
// (where the filesystem has no O_TMPFILE, a write's body sits under such a
// name until it is placed). Each is a deletion like any other: journalled
// before it happens, its directory opened beneath the root without links
// or mounts, and only a name that is xfsq's temporary file's and only a
// file: a directory a tenant made there is the tenant's. It runs to its
// end whatever ctx says: no reservation names the file any more, so one
// left now would stay, holding room, until a tenant removed it.
func (m *Manager) RemoveTemps(ctx context.Context, reclaimed []store.Reservation) {
	ctx = context.WithoutCancel(ctx)
	var root *saferm.Dir
	for _, r := range reclaimed {
		dir, name := path.Split(r.TempPath)
		if !strings.HasPrefix(name, TempPrefix) || dir == "" {
			continue
		}
		if root == nil {
			var err error
			if root, err = saferm.Open(m.Root); err != nil {
				return
			}
			defer root.Close()
		}
		parent, err := root.OpenDir(path.Clean(dir))
		if err != nil {
			continue // gone, or leading out through a link: nothing of ours there
		}
		m.removeTemp(ctx, parent, r.Project, r.Area, name, "reclaimed",
			"the temporary file of a write whose reservation was reclaimed")
		parent.Close()
	}
}

// removeTemp removes, journalled, the temporary file name in parent if it
// is one: xfsq writes regular files there, so a directory, a link, a FIFO
// or a mount at the name is a tenant's. On the fallback what went is
// credited as a removal through files rm is: what the last walk counted of
// it, and only if its last link went (a tenant's hard link keeps the
// blocks).
func (m *Manager) removeTemp(ctx context.Context, parent *saferm.Dir, project, area, name, reason, policy string) error {
	st, err := parent.Lstat(name)
	if errors.Is(err, os.ErrNotExist) {
		return nil // never made (O_TMPFILE), placed, or removed
	}
	if err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.OtherMount {
		return nil
	}
	rec := deletion.Record{Area: area, Bytes: st.Blocks * 512, Reason: reason, Policy: policy}
	tree := store.Tree{Project: project, Area: area}
	cutoff, err := m.RemovalCutoff(ctx, tree)
	if err != nil {
		return err
	}
	started := time.Now()
	_, rep, err := m.RemoveJournalled(ctx, project, parent, name, rec,
		saferm.Options{NotDirectory: true, ConfirmLastLink: true, CountChangedBefore: cutoff})
	if credit := m.CreditRemoval(ctx, tree, quota.Usage{Bytes: rep.Bytes, Inodes: rep.Inodes}, rep.Uncounted, started); err == nil {
		err = credit
	}
	return err
}
