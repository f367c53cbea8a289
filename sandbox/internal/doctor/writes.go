package doctor

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/internal/saferm"
	"github.com/xfsq/xfsq/sandbox/internal/core"
	"github.com/xfsq/xfsq/store"
	"github.com/xfsq/xfsq/units"
)

// What writes left behind: their temporary files and, on the fallback,
// their reservations.

// Kinds of finding about the reservations of writes in flight (fallback).
const (
	// A write whose process runs and whose reservation is renewed.
	WriteInProgress = "write-in-progress"
	// A reservation that can never be committed: its process is gone, or
	// it made no progress for reservation_ttl. It holds room until the
	// next write reclaims it, or doctor --fix does.
	DeadReservation = "dead-reservation"
	// A write's temporary file (TempPrefix…) at a tree's top that no
	// reservation names, untouched for reservation_ttl: left by a process
	// killed between linking a body there and placing it (on any
	// backend), or by a reclaim that could not remove it. It holds room in
	// the tree's quota, and the file layer refuses the name.
	StrayTemp = "stray-temp"
)

// tempNames lists the names at the top of the tree at rel that are
// temporary files' names, sorted. It reads the directory in batches and
// keeps only those: a tenant may keep millions of names at its top.
func tempNames(root *saferm.Dir, rel string) ([]string, error) {
	top, err := root.OpenDir(rel)
	if err != nil {
		return nil, err
	}
	defer top.Close()
	f, err := top.File()
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	for {
		names, err := f.Readdirnames(1024)
		for _, n := range names {
			if strings.HasPrefix(n, core.TempPrefix) {
				out = append(out, n)
			}
		}
		if err != nil { // io.EOF at the end
			break
		}
	}
	slices.Sort(out)
	return out, nil
}

// strayTemps finds the temporary files at the tops of trees that no
// reservation of this host names and nothing changed for ttl (a write that
// is placing its body holds it a moment only; one streaming renews its
// reservation). Read beneath the root without links; only regular files.
func (d *Doctor) strayTemps(ctx context.Context, trees []store.Tree, ready func(store.Tree) bool) ([]Finding, error) {
	v, err := d.Setting(ctx, "reservation_ttl")
	if err != nil {
		return nil, err
	}
	ttl := v.Duration()
	held := map[string]bool{}
	if !d.IsXFS() { // on XFS the kernel is the reservation: no rows
		all, err := d.Store.Reservations(ctx)
		if err != nil {
			return nil, err
		}
		for _, r := range all {
			held[r.TempPath] = true
		}
	}
	root, err := saferm.Open(d.Root)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	var out []Finding
	for _, t := range trees {
		if !ready(t) {
			continue
		}
		names, err := tempNames(root, t.Path)
		if err != nil {
			continue // missing or not a directory: checkTree's finding
		}
		for _, name := range names {
			rel := path.Join(t.Path, name)
			if held[rel] {
				continue
			}
			st, err := root.Lstat(rel)
			if err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.OtherMount ||
				time.Since(time.Unix(st.Ctime.Sec, int64(st.Ctime.Nsec))) < ttl {
				continue
			}
			holding := "holding " + units.FormatIEC(st.Blocks*512)
			if st.Nlink > 1 { // a tenant's link to a file that stays
				holding = fmt.Sprintf("one of %d names of a file of %s (removing it frees nothing)", st.Nlink, units.FormatIEC(st.Blocks*512))
			}
			f := Finding{Kind: StrayTemp, Project: t.Project, Area: t.Area, Path: rel, ProjectID: t.ProjectID,
				Detail: fmt.Sprintf("a write's temporary file %s, named by no reservation, unchanged since %s",
					holding, time.Unix(st.Ctime.Sec, 0).UTC().Format(time.RFC3339)),
				Fix: "remove it (journalled storage.evicted, reason stray)"}
			f.fixFn = func(ctx context.Context) error {
				root, err := saferm.Open(d.Root)
				if err != nil {
					return err
				}
				defer root.Close()
				top, err := root.OpenDir(t.Path)
				if err != nil {
					return err
				}
				defer top.Close()
				return d.RemoveTemp(ctx, top, t.Project, t.Area, name, "stray", "the doctor's repair: a temporary file no write holds")
			}
			out = append(out, f)
		}
	}
	return out, nil
}

// reservationFindings reports every reservation: live ones for what they
// hold, dead ones with a fix that reclaims them and their temporary files.
func (d *Doctor) reservationFindings(ctx context.Context) ([]Finding, error) {
	all, err := d.Store.Reservations(ctx)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	var out []Finding
	for _, r := range all {
		f := Finding{Project: r.Project, Area: r.Area}
		held := fmt.Sprintf("reservation %d holds %s and %d inodes for %s", r.ID, units.FormatIEC(r.Bytes), r.Inodes, r.Holder)
		switch {
		case d.reservationGone(ctx, r.Holder):
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
			reclaimed, err := d.Store.Reclaim(ctx, core.HolderGone)
			d.RemoveTemps(ctx, reclaimed)
			return err
		}
		out = append(out, f)
	}
	return out, nil
}

// reservationGone is core.HolderGone with the lease of the holder's
// process; in doubt (the store does not answer) the writer may still run.
func (d *Doctor) reservationGone(ctx context.Context, holder string) bool {
	l, err := d.Store.HolderLease(ctx, holder)
	return err == nil && core.HolderGone(holder, l)
}
