package project

import (
	"context"
	"fmt"
	"os"
	"path"
	"strings"
	"time"

	"github.com/xfsq/xfsq/store"
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

// RemoveTemps deletes the temporary files named by reclaimed reservations,
// through os.Root so that no name leads out of the root, and only names
// that are xfsq's temporary files.
func (m *Manager) RemoveTemps(reclaimed []store.Reservation) {
	if len(reclaimed) == 0 {
		return
	}
	root, err := os.OpenRoot(m.Root)
	if err != nil {
		return
	}
	defer root.Close()
	for _, r := range reclaimed {
		if strings.HasPrefix(path.Base(r.TempPath), TempPrefix) {
			root.Remove(r.TempPath)
		}
	}
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
			m.RemoveTemps(reclaimed)
			return err
		}
		out = append(out, f)
	}
	return out, nil
}
