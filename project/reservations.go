package project

import (
	"context"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/xfsq/xfsq/internal/saferm"
	"github.com/xfsq/xfsq/store"
	"github.com/xfsq/xfsq/sweep"
	"github.com/xfsq/xfsq/units"
)

// Kinds of finding about the reservations of writes in flight (fallback).
const (
	// A write whose process runs and whose reservation is renewed.
	WriteInProgress = "write-in-progress"
	// A reservation that can never be committed: its process is gone, or
	// it made no progress for reservation_ttl. It holds room until the
	// next write reclaims it, or doctor --fix does.
	DeadReservation = "dead-reservation"
)

// HolderGone reports whether a holder (pid.start@host/op-N) is known to
// have stopped: an operation of this process that has ended, or on this
// host no process with that pid and start time runs. A holder on another
// host is never taken for gone.
func HolderGone(h string) bool { return !holderAlive(h) }

// TempPrefix starts the name of every temporary file of package files
// (where the filesystem has no O_TMPFILE): what a reclaim may delete.
const TempPrefix = ".xfsq-tmp-"

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
		m.removeTemp(ctx, root, r, path.Clean(dir), name)
	}
}

// removeTemp removes one reclaimed write's temporary file, name in dir.
func (m *Manager) removeTemp(ctx context.Context, root *saferm.Dir, r store.Reservation, dir, name string) {
	parent, err := root.OpenDir(dir)
	if err != nil {
		return // gone, or leading out through a link: nothing of ours there
	}
	defer parent.Close()
	st, err := parent.Lstat(name)
	if err != nil || st.IsDir() {
		return // never made (O_TMPFILE), placed, or not ours
	}
	rec := sweep.Record{Area: r.Area, Bytes: st.Blocks * 512, Reason: "reclaimed",
		Policy: "the temporary file of a write whose reservation was reclaimed"}
	m.RemoveJournalled(ctx, r.Project, parent, name, rec, saferm.Options{NotDirectory: true})
}

// reservationFindings reports every reservation: live ones for what they
// hold, dead ones with a fix that reclaims them and their temporary files.
func (m *Manager) reservationFindings(ctx context.Context) ([]Finding, error) {
	all, err := m.Store.Reservations(ctx)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	var out []Finding
	for _, r := range all {
		f := Finding{Project: r.Project, Area: r.Area}
		held := fmt.Sprintf("reservation %d holds %s and %d inodes for %s", r.ID, units.FormatIEC(r.Bytes), r.Inodes, r.Holder)
		switch {
		case HolderGone(r.Holder):
			f.Kind, f.Detail = DeadReservation, held+"; that process is gone"
		case r.ExpiresAt.Before(now):
			f.Kind, f.Detail = DeadReservation, held+fmt.Sprintf("; it made no progress since %s (reservation_ttl)", r.ExpiresAt.Format(time.RFC3339))
		default:
			f.Kind, f.Detail, f.Fix = WriteInProgress, held+fmt.Sprintf(", renewed until %s", r.ExpiresAt.Format(time.RFC3339)), "none: the write is running"
			out = append(out, f)
			continue
		}
		f.Fix = "release it and remove its temporary file (the next write on this host does the same)"
		f.fixFn = func(ctx context.Context) error {
			reclaimed, err := m.Store.Reclaim(ctx, HolderGone)
			m.RemoveTemps(ctx, reclaimed)
			return err
		}
		out = append(out, f)
	}
	return out, nil
}
