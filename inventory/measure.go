package inventory

import (
	"os"
	"syscall"
	"time"
)

// Usage is one entry measured as du measures it, and what deleting it
// would give back. This is the one measure of a tree's usage, so that the
// fallback backend's usage, the sweep's entries and the credit a removal
// gives the fallback's ledger can never disagree.
type Usage struct {
	// Bytes and Inodes are allocated bytes and inodes, a directory's own
	// included, each hard-linked file once.
	Bytes, Inodes uint64
	Newest        time.Time // newest mtime inside (see Mtime)
	// LastUse is the newest of Newest and the atimes of the files inside
	// (see LastUse), as the sweep ages cache entries. Set for directories.
	LastUse time.Time
	// FreeBytes and FreeInodes are Bytes and Inodes less the files that
	// also have links outside the entry: deleting it leaves those files in
	// place. A removal credits the ledger with these, never more, so the
	// ledger over-counts, never under-counts.
	FreeBytes, FreeInodes uint64
	// Settled is false when entries vanished or changed under the walk, or
	// directories changed since it began (Result.Changed: a tenant renaming
	// directories as it ran can hide one from every name it looked at), so
	// that the figure may be low.
	Settled bool
	// MountPoints is Result.MountPoints: entries not measured because
	// another filesystem is mounted on them.
	MountPoints uint64
}

// measureOpts is a walk for totals only.
var measureOpts = Options{Depth: 1, TopK: 1}

// Measure measures the entry at path, never following a symlink (a
// symlink is measured as itself) nor entering another filesystem.
func Measure(path string) (Usage, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return Usage{}, err
	}
	if !fi.IsDir() {
		return MeasureInfo(fi), nil
	}
	res, err := Walk(path, measureOpts)
	if err != nil {
		return Usage{}, err
	}
	return fromWalk(res), nil
}

// MeasureDir measures the directory at dir, refusing anything else (a
// symlink included: Walk never follows one), as a tree's root is measured.
func MeasureDir(dir string) (Usage, error) {
	res, err := Walk(dir, measureOpts)
	if err != nil {
		return Usage{}, err
	}
	return fromWalk(res), nil
}

// MeasureFile measures the directory open as f; see WalkFile.
func MeasureFile(f *os.File) (Usage, error) { return MeasureWriting(f, nil) }

// MeasureWriting is MeasureFile leaving out the writes in progress named
// (Options.Writing).
func MeasureWriting(f *os.File, writing map[string]InProgress) (Usage, error) {
	opts := measureOpts
	opts.Writing = writing
	res, err := WalkFile(f, opts)
	if err != nil {
		return Usage{}, err
	}
	return fromWalk(res), nil
}

// MeasureInfo measures a non-directory from its lstat.
func MeasureInfo(fi os.FileInfo) Usage {
	u := Usage{Bytes: uint64(fi.Size()), Inodes: 1, Newest: fi.ModTime().UTC(), Settled: true}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		u.FreeBytes, u.FreeInodes = u.Bytes, u.Inodes
		return u
	}
	u.Bytes = uint64(st.Blocks) * 512
	// An mtime stamped in the future must not pin the entry (Mtime).
	u.Newest = time.Unix(0, min(st.Mtim.Nano(), st.Ctim.Nano())).UTC()
	if st.Nlink <= 1 {
		u.FreeBytes, u.FreeInodes = u.Bytes, u.Inodes
	}
	return u
}

func fromWalk(res *Result) Usage {
	r := res.Root
	u := Usage{Bytes: r.SizeBytes, Inodes: r.Files + r.Dirs, Newest: r.Mtime, LastUse: r.LastUse, Settled: res.Errors == 0 && res.Changed == 0, MountPoints: res.MountPoints}
	u.FreeBytes = u.Bytes - min(u.Bytes, res.SharedBytes)
	u.FreeInodes = u.Inodes - min(u.Inodes, res.SharedFiles)
	return u
}
