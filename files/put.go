package files

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	apiv1 "github.com/xfsq/xfsq/api/v1"
	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/internal/capdrop"
	"github.com/xfsq/xfsq/internal/fault"
	"github.com/xfsq/xfsq/internal/nomount"
	"github.com/xfsq/xfsq/internal/saferm"
	"github.com/xfsq/xfsq/quota"
)

// PutResult says what a write did: the path written, relative to the
// sandbox root, its bytes, and whether it replaced a file. The wire's type
// (api/v1), which the server writes as it is.
type PutResult = apiv1.PutResult

// A streaming write reserves ahead of its data in steps: firstStep to
// begin with, then as much again as has arrived (so its reservation at most
// doubles what it holds), at most maxStep at a time, and never more than
// the allowance holds. Small first steps let many small uploads share a
// tree; a large body still needs only a logarithmic number of steps.
const (
	firstStep = 64 << 10
	maxStep   = 64 << 20
)

// Put writes r to path p in a tree. size is the body's length, or -1 when
// unknown. The write is admitted before it allocates; a body of unknown
// length is read at most to its remaining allowance plus one byte and is
// refused — never cut — if it goes past it. Nothing is visible at p until
// the whole body is on disk; a refused or failed write leaves p as it was.
//
// It runs without CAP_SYS_RESOURCE on its thread (internal/capdrop): on
// ext4 a writer holding it passes the kernel's hard limits, and xfsq's
// writes into a tree must be bound by them as a tenant's are.
func (l *Layer) Put(ctx context.Context, name, area, p string, r io.Reader, size int64) (res PutResult, err error) {
	err = capdrop.WithoutSysResource(func() error {
		res, err = l.put(ctx, name, area, p, r, size)
		return err
	})
	return res, err
}

// put is a write's phases: open the target, admit the write, receive the
// body into a file with no name in the tree, commit its bytes, place it.
func (l *Layer) put(ctx context.Context, name, area, p string, r io.Reader, size int64) (PutResult, error) {
	// The write's reservation is held by its own operation, so a write
	// that ended without releasing it is reclaimable at once.
	ctx, end := l.m.BeginOp(ctx)
	defer end()
	if _, err := CleanNew(p); err != nil {
		return PutResult{}, err
	}
	t, p, err := l.openPath(ctx, name, area, p, errkind.Fix("name a file"))
	if err != nil {
		return PutResult{}, err
	}
	defer t.Close()
	res := PutResult{Path: path.Join(t.Path, p)}
	var missing uint64
	if res.Replaced, missing, err = target(t, p); err != nil {
		return res, err
	}
	w := &writer{l: l, t: t, ctx: ctx, path: p, block: blockSize(t.dir.Fd()), inodes: 1 + missing, temp: tempName(), fd: -1, size: size}
	w.dirBytes = missing * w.block // each new directory takes a block
	if err := w.admit(size); err != nil {
		return res, err
	}
	defer w.abandon() // undoes whatever a failed write left; a no-op after commit
	if err := w.receive(r, size); err != nil {
		return res, err
	}
	dir, base, err := w.parent()
	if err != nil {
		return res, err
	}
	defer dir.Close()
	replacing, err := w.commit()
	if err != nil {
		return res, err
	}
	if err := w.placeOrRecover(dir, base, replacing); err != nil {
		return res, err
	}
	w.done = true
	w.acct.Placed(ctx, w.replaced, w.grown, replacing)
	dir.Sync()
	if w.named || path.Dir(p) != "." {
		w.top.Sync()
	}
	res.WrittenBytes = w.written
	return res, nil
}

// target checks what is at p now, which a write may replace only if it
// is a regular file (replaced), and counts the directories it must make.
func target(t *tree, p string) (replaced bool, missing uint64, err error) {
	if fi, err := t.lstat(p); err == nil {
		switch {
		case fi.IsDir():
			return false, 0, &PathError{Path: p, Reason: "it is a directory"}
		case fi.Mode()&(fs.ModeDevice|fs.ModeNamedPipe|fs.ModeSocket) != 0:
			return false, 0, &PathError{Path: p, Reason: "it is a device, FIFO or socket; refusing to replace it"}
		case fi.Mode()&fs.ModeSymlink != 0:
			return false, 0, &PathError{Path: p, Reason: "it is a symbolic link; xfsq writes neither through nor over links (remove it first)"}
		}
		// A replacement is admitted as the kernel would admit it on XFS:
		// the new file whole, beside the old one, which stays counted
		// until the rename has unlinked it (Placed credits it then, as far
		// as it was counted). Admitting only the difference took for
		// granted that the old file would go and had been counted, and a
		// tenant renaming or linking it away mid-upload, or having written
		// it outside xfsq, got the difference for nothing.
		replaced = true
	} else if !errors.Is(err, os.ErrNotExist) {
		return false, 0, pathErr(p, err)
	}
	missing, err = missingDirs(t, p)
	return replaced, missing, err
}

// receive writes the body to the write's file and makes it durable, and
// checks again, before anything of it is made in the tree, what the body
// may have changed: a named file written to by something in the tree, a
// limit lowered or a grace run out while it arrived.
func (w *writer) receive(r io.Reader, size int64) error {
	if err := w.create(); err != nil {
		return err
	}
	if w.ctx.Done() != nil {
		r = &ctxReader{ctx: w.ctx, r: r, res: make(chan readResult, 1)}
	}
	if err := w.copy(r, size); err != nil {
		return err
	}
	fault.Point("put:before-fsync")
	if err := w.file.Sync(); err != nil {
		return w.mapErr(err)
	}
	// Under its name the body is the tree's to open: one written to by
	// something in the tree is not what the client sent, and blocks added
	// to it (fallocate) are counted, as the walk left it to this write.
	if w.named {
		var st unix.Stat_t
		if err := unix.Fstat(w.fd, &st); err != nil {
			return w.mapErr(err)
		}
		if uint64(st.Size) != w.written {
			return errWrittenTo(w.path)
		}
		w.blocks = uint64(st.Blocks) * 512
	}
	return w.acct.Recheck(w.ctx, w.delta(), w.named)
}

// parent makes the directories the path needs and opens the one the file
// is placed in, with the name it takes there.
func (w *writer) parent() (*os.File, string, error) {
	if dir := path.Dir(w.path); dir != "." {
		if err := w.makeDirs(dir); err != nil {
			return nil, "", w.mapErr(err) // a full tree refuses a directory too
		}
	}
	return openParent(w.t, w.path)
}

// commit records the write's bytes in the ledger before the rename: a
// crash in between over-counts until the next walk, never under. It
// returns when the replacing began: a walk ending after it may have seen
// the old file gone.
func (w *writer) commit() (time.Time, error) {
	// What a replaced file is credited depends on whether the last walk
	// counted it: the cutoff is read before the rename, so a walk ending
	// meanwhile only makes it earlier (credits less: the safe side).
	var err error
	if w.cutoff, err = w.t.RemovalCutoff(w.ctx); err != nil {
		return time.Time{}, err
	}
	var mine unix.Stat_t
	if err := unix.Fstat(w.fd, &mine); err != nil {
		return time.Time{}, err
	}
	// The commit's reservation, emptied, stays until the file is in place
	// (Placed), so that a walk beginning in between keeps the ledger row
	// it cannot see the file of. The row names the inode, so that
	// overwriting this file later credits what the row counted.
	ino := mine.Ino
	if mine.Dev != w.t.dir.Dev() {
		ino = 0 // a number on another device (a btrfs subvolume) names no inode of the tree's
	}
	if err := w.acct.Commit(w.ctx, w.delta(), ino); err != nil {
		return time.Time{}, err
	}
	if putCommitted != nil {
		putCommitted(w.path)
	}
	replacing := time.Now()
	w.committed = true
	return replacing, nil
}

// placeOrRecover gives the committed file its name; when that fails it
// finds where the file is now and settles the ledger as that leaves it.
func (w *writer) placeOrRecover(dir *os.File, base string, replacing time.Time) error {
	unlock := lockPlacing(w.l.m.Dir(), w.t.Path)
	err := w.grewAround(func() error { return w.place(int(dir.Fd()), base, w.path) }, w.top, dir)
	unlock()
	if err == nil {
		return nil
	}
	stuck := w.unlinkTemp()
	switch w.whereNow(int(dir.Fd()), base) {
	case atTarget:
		if !errors.Is(err, errKeptStuck) {
			// Placed after all: the write happened.
			return nil
		}
		// Placed, but what stood at p is stuck at the temporary name.
		w.done = true
		w.acct.Placed(w.ctx, w.replaced, w.grown, replacing)
		return w.withKept(errkind.New(errkind.Conflict, fmt.Errorf("%s: written", w.path)))
	case elsewhere:
		// Something in the tree took the file away before it reached p
		// (or off p the instant it got there) and it is in the tree: it
		// stays counted, as any file there.
		w.done = true
		w.acct.Placed(w.ctx, Replaced{}, w.grown, replacing)
		if stuck != nil {
			// Not the tenant's move: the top refused xfsq's own unlink.
			return errkind.New(errkind.Conflict, fmt.Errorf("%w; xfsq's temporary file %s, which holds what was written (counted), stays at the tree's top, which refused its removal too (%v)", err, w.temp, stuck))
		}
		return w.withKept(errTakenAway(w.path))
	default:
		w.acct.Undo(w.ctx, w.left())
		return w.withKept(err) // abandon releases the reservation
	}
}

// withKept adds to a write's error where what stood at the target went
// when it was not the file the write replaced (see keep).
func (w *writer) withKept(err error) error {
	switch {
	case w.keptErr != nil:
		return errkind.New(errkind.Of(err), fmt.Errorf("%w; what stood at %s when the file was put in place could not be moved off xfsq's temporary name %s at the tree's top (%v): rename it to keep it", err, w.path, w.temp, w.keptErr))
	case w.kept != "":
		return errkind.New(errkind.Of(err), fmt.Errorf("%w; what stood at %s when the file was put in place is kept at %s", err, w.path, w.kept))
	}
	return err
}

// noTmpfile makes tests take the path of filesystems without O_TMPFILE.
var noTmpfile bool

// putCommitted, when a test sets it, runs between a write's commit and
// its file taking its name: where a walk must not lose the write.
var putCommitted func(p string)

// create makes the file the body is written to. Where the filesystem can,
// it has no name at all (O_TMPFILE) until it is linked into place, so a
// tenant has nothing to swap while the body streams; else it is a named
// temporary file at the tree's top, checked again before the rename.
func (w *writer) create() error {
	top, err := w.t.dir.File()
	if err != nil {
		return err
	}
	w.top = top
	if !noTmpfile {
		fd, err := unix.Openat(int(top.Fd()), ".", unix.O_TMPFILE|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
		if err == nil {
			w.fd, w.file = fd, os.NewFile(uintptr(fd), w.temp)
			return nil
		}
		// EOPNOTSUPP: the filesystem has no O_TMPFILE; EISDIR: the kernel has none.
		if !errors.Is(err, unix.EOPNOTSUPP) && !errors.Is(err, unix.EISDIR) && !errors.Is(err, unix.EINVAL) {
			return w.mapErr(err)
		}
	}
	// Its name may grow the top directory, as any name xfsq adds: measured.
	fd := -1
	unlock := lockPlacing(w.l.m.Dir(), w.t.Path)
	err = w.grewAround(func() (err error) {
		fd, err = unix.Openat(int(top.Fd()), w.temp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
		return err
	}, top)
	unlock()
	if err != nil {
		return w.mapErr(err)
	}
	w.fd, w.file, w.named = fd, os.NewFile(uintptr(fd), w.temp), true
	// Which inode is ours at the name: a walk leaves out that one alone.
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return w.mapErr(err)
	}
	return w.acct.NamedTemp(w.ctx, st.Ino)
}

// errSwapped is a write whose temporary name something in the tree
// replaced under it: a collision with the tree's own activity, to retry
// (409, exit 1), not a refused path nor xfsq's failure.
func errSwapped(p string) error {
	return errkind.New(errkind.Conflict, fmt.Errorf("%s: xfsq's temporary file was replaced while being written (by something in the tree); nothing was written, try again", p))
}

// errWrittenTo is a write whose named temporary file something in the tree
// wrote to (its size is not what xfsq wrote): its content is not the
// client's, and nothing is placed.
func errWrittenTo(p string) error {
	return errkind.New(errkind.Conflict, fmt.Errorf("%s: xfsq's temporary file was written to while the body arrived (by something in the tree); nothing was written, try again", p))
}

// errTakenAway is a write whose file something in the tree moved or linked
// elsewhere in it before it reached p: its content is in the tree and
// counted there, but p does not hold it.
func errTakenAway(p string) error {
	return errkind.New(errkind.Conflict, fmt.Errorf("%s: something in the tree moved xfsq's file away while it was being put in place; what was written is in the tree (and counted) under another name, not at %s; try again", p, p))
}

// Where the written file is once placing it failed.
const (
	nowhere   = iota // no name holds it: nothing was written
	atTarget         // p holds it
	elsewhere        // another name in the tree holds it, given by the tenant
)

func (w *writer) whereNow(dir int, base string) int {
	var mine, st unix.Stat_t
	if unix.Fstat(w.fd, &mine) != nil {
		return elsewhere // cannot tell: keep it counted
	}
	if nomount.Lstat(dir, base, &st) == nil && sameInode(&st, &mine) {
		return atTarget
	}
	if mine.Nlink > 0 {
		return elsewhere
	}
	return nowhere
}

// unlinkTemp takes the temporary name away if it still names the file
// written. A tenant may have renamed something of its own onto it: xfsq
// removes nothing it did not write, so that stays where the tenant put it.
// (What is left is the instant between the check and the unlink, which no
// call of the kernel closes for a name in a directory others write.)
// It returns the error of an unlink the tree refused (an append-only
// top, chattr +a: the file then keeps its temporary name).
func (w *writer) unlinkTemp() error {
	if !w.named {
		return nil
	}
	w.named = false
	top := int(w.top.Fd())
	var mine, st unix.Stat_t
	if unix.Fstat(w.fd, &mine) == nil && nomount.Lstat(top, w.temp, &st) == nil && sameInode(&st, &mine) {
		if err := unix.Unlinkat(top, w.temp, 0); err != nil && !errors.Is(err, unix.ENOENT) {
			return err
		}
	}
	return nil
}

func sameInode(a, b *unix.Stat_t) bool { return a.Dev == b.Dev && a.Ino == b.Ino }

// place puts the written file at base in dir, replacing what is there, and
// makes sure that what lands there is the inode written, not something
// swapped in for the temporary name.
func (w *writer) place(dir int, base, p string) error {
	var mine unix.Stat_t
	if err := unix.Fstat(w.fd, &mine); err != nil {
		return err
	}
	top := int(w.top.Fd())
	// A new name: linking the open file there is atomic, never replaces
	// anything, and names the inode written whatever became of its
	// temporary name.
	err := linkFd(w.fd, dir, base)
	if err == nil {
		w.unlinkTemp()
		return nil
	}
	if !errors.Is(err, unix.EEXIST) {
		return w.placeFailed(p, err)
	}
	// A replacement needs a rename, so the file needs its temporary name.
	if !w.named {
		if err := linkFd(w.fd, top, w.temp); err != nil {
			return w.placeFailed(p, err)
		}
		w.named = true
	}
	hook("put:named")
	// Before the exchange, which changes dir. A file's own old ctime does
	// not show the walk counted it where it is: renaming a directory
	// changes the directory's ctime, not its files', so one moved in from
	// another tree after the walk holds files that look unchanged. Every
	// directory down to dir must be unchanged too, as removals judge.
	settled := w.t.dir.ParentsSettledAt(p, saferm.Options{CountChangedBefore: w.cutoff}, dir)
	var old unix.Stat_t
	haveOld := nomount.Lstat(dir, base, &old) == nil
	var oldBirth *unix.StatxTimestamp
	if haveOld {
		oldBirth = birthOf(dir, base, &old)
	}
	// The temporary name is checked last, next to the exchange: what a
	// tenant renames onto it between the two lands at base (as if it had
	// renamed it there itself), and the write says it did not land.
	var st unix.Stat_t
	if err := nomount.Lstat(top, w.temp, &st); err != nil || !sameInode(&st, &mine) {
		return errSwapped(p)
	}
	hook("put:verified")
	// Exchanging rather than renaming keeps what stood at base, under the
	// temporary name, until what landed at base is known: the file this
	// write replaces is removed only then, and only while it is that file.
	// The exchange is never undone. An undo is a second exchange, which
	// moves whatever stands at base by then onto the temporary name: a
	// tenant's own entry made there an instant after the first (its file
	// then removed by doctor --fix as a stray temporary file, its
	// directory hidden from the file API). What a tenant does at base after
	// the exchange is the tenant's, as if done after the write returned.
	err = unix.Renameat2(top, w.temp, dir, base, unix.RENAME_EXCHANGE)
	hook("put:exchanged")
	switch {
	case err == nil:
		w.named = false
		landed := nomount.Lstat(dir, base, &st) == nil && sameInode(&st, &mine)
		w.settleDisplaced(top, dir, base, &mine, &old, oldBirth, haveOld && settled, haveOld, landed)
		switch {
		case !landed:
			return errSwapped(p) // placeOrRecover says where the file is now
		case w.keptErr != nil:
			return errKeptStuck
		}
		return nil
	case errors.Is(err, unix.ENOENT):
		// What was at base went away meanwhile: a new name again. (Or
		// the temporary name did, which a tenant unlinked: then base is
		// still there and the link fails, a collision.)
		if err := linkFd(w.fd, dir, base); err != nil {
			return w.placeFailed(p, err)
		}
		w.unlinkTemp()
		return nil
	case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS):
		// A filesystem without exchange: check, rename, check again.
	default:
		return w.placeFailed(p, err)
	}
	if err := unix.Renameat(top, w.temp, dir, base); err != nil {
		return w.placeFailed(p, err)
	}
	w.named = false
	if nomount.Lstat(dir, base, &st) != nil || !sameInode(&st, &mine) {
		return errSwapped(p)
	}
	return nil
}

// settleDisplaced deals with what the exchange put at the temporary name:
// what stood at base at that instant (or what a tenant renamed onto the
// name since). The file this write replaced, once the write landed, is
// removed and credited as far as its unlinking is seen to free it. Anything
// else — a file or directory a tenant made at base during the write, or
// the replaced file of a write that did not land — is the tenant's, and
// is moved to a name it can see (keep), never left where doctor --fix
// removes a file and the file API hides a directory.
//
// What stood at base is told by its inode number and, where the filesystem
// keeps one, its birth time (oldBirth): a tenant that removes the file and
// makes its own at base in the instant before the exchange may be handed
// the freed number (ext4 hands it out at once), and its file, born later,
// would otherwise be unlinked as the file the write replaces.
func (w *writer) settleDisplaced(top, dir int, base string, mine, old *unix.Stat_t, oldBirth *unix.StatxTimestamp, walked, haveOld, landed bool) {
	fd, err := unix.Openat(top, w.temp, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return // nothing there: a tenant took it
	}
	defer unix.Close(fd)
	var at unix.Stat_t
	if unix.Fstat(fd, &at) != nil {
		return
	}
	if !landed || !haveOld || !sameInode(&at, old) || !bornAt(fd, oldBirth) || at.Mode&unix.S_IFMT != unix.S_IFREG {
		w.keep(top, dir, base)
		return
	}
	// Unlinked only while it is the file seen at base before the exchange:
	// no other write of xfsq's can place in between (placing is
	// serialised). Measured through a handle on the inode, after the
	// unlink: only an inode left with no link is credited, so a tenant
	// renaming another file onto the temporary name in the instant between
	// the look and the unlink gets nothing credited (its file removed is
	// then over-counted: the safe side).
	unix.Unlinkat(top, w.temp, 0)
	var gone unix.Stat_t
	if unix.Fstat(fd, &gone) == nil && gone.Mode&unix.S_IFMT == unix.S_IFREG && gone.Nlink == 0 && !sameInode(&gone, mine) {
		w.replaced = w.credit(&gone, old, walked)
	}
}

// birthOf is the birth time of the entry name in dirfd while it is still
// the inode st describes, where its filesystem keeps one; nil otherwise.
func birthOf(dirfd int, name string, st *unix.Stat_t) *unix.StatxTimestamp {
	var sx unix.Statx_t
	if unix.Statx(dirfd, name, nomount.LookFlags, unix.STATX_INO|unix.STATX_BTIME, &sx) != nil ||
		sx.Mask&unix.STATX_BTIME == 0 || sx.Ino != st.Ino {
		return nil
	}
	return &sx.Btime
}

// bornAt says whether the inode open at fd was born at birth (true when
// either birth time is unknown: the inode number alone tells then).
func bornAt(fd int, birth *unix.StatxTimestamp) bool {
	if birth == nil {
		return true
	}
	var sx unix.Statx_t
	if unix.Statx(fd, "", unix.AT_EMPTY_PATH, unix.STATX_BTIME, &sx) != nil || sx.Mask&unix.STATX_BTIME == 0 {
		return true
	}
	return sx.Btime == *birth
}

// keep moves what is at the temporary name to a fresh name beside base
// (else at the tree's top), which the tenant sees and nothing of xfsq's
// removes, and records it in kept (relative to the tree). Only the
// temporary name's entry moves: the rename replaces nothing. What stays
// at the temporary name because both renames failed (a full tree) is
// recorded in keptErr.
func (w *writer) keep(top, dir int, base string) {
	for i := range 4 {
		to, rel := dir, path.Join(path.Dir(w.path), keptName(base))
		if i%2 == 1 {
			to, rel = top, keptName(base)
		}
		err := unix.Renameat2(top, w.temp, to, path.Base(rel), unix.RENAME_NOREPLACE)
		switch {
		case err == nil:
			w.kept, w.keptErr = rel, nil
			return
		case errors.Is(err, unix.ENOENT):
			w.keptErr = nil
			return // a tenant took it meanwhile
		}
		w.keptErr = err
	}
}

// keptName is a fresh name for an entry that stood at base: base (cut to
// fit a name's limit) and a random suffix, not a temporary file's name.
func keptName(base string) string {
	b := make([]byte, 4)
	rand.Read(b)
	suffix := ".xfsq-kept-" + hex.EncodeToString(b)
	if n := maxNameBytes - len(suffix); len(base) > n {
		base = base[:n]
		// Not ending in part of a character cut off.
		for i := 0; i < utf8.UTFMax-1 && base != ""; i++ {
			if r, size := utf8.DecodeLastRuneInString(base); r != utf8.RuneError || size != 1 {
				break
			}
			base = base[:len(base)-1]
		}
	}
	return base + suffix
}

// errKeptStuck is place's report of a write that landed while what stood
// at base could not be moved off the temporary name (placeOrRecover says
// so to the caller).
var errKeptStuck = errors.New("what stood at the target stays at the temporary name")

// Placing a written file (place) is serialised per tree: between one
// write's exchange and its check of what landed, another write of the same
// path must not exchange too, or the first takes the second's placed file
// for a tenant's and reports that it did not land. Per tree, not per root: placing looks
// at names in the tenant's tree, and a tenant that stalls one of those
// looks (a FUSE mount made on the target at the wrong instant) must hold up
// its own writes only. In this process a mutex per tree; across processes
// (the CLI beside serve) an open file description lock on one byte of
// ROOT/.xfsq/place.lock chosen by the tree's path. Placing takes
// microseconds.
var placing sync.Map // tree path -> *sync.Mutex

// lockPlacing takes the placing lock of the tree at treePath (relative to
// root) and returns its release. Were the lock file not to open (a
// read-only .xfsq), the mutex still holds within this process.
func lockPlacing(root, treePath string) func() {
	mu, _ := placing.LoadOrStore(root+"\x00"+treePath, new(sync.Mutex))
	mu.(*sync.Mutex).Lock()
	f, err := os.OpenFile(filepath.Join(root, ".xfsq", "place.lock"), os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		f = nil
	}
	if f != nil {
		h := fnv.New64a()
		h.Write([]byte(treePath))
		lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: io.SeekStart, Start: int64(h.Sum64() & (1<<40 - 1)), Len: 1}
		for unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLKW, &lk) == unix.EINTR {
		}
	}
	return func() {
		if f != nil {
			f.Close() // releases the lock: it belongs to this open file
		}
		mu.(*sync.Mutex).Unlock()
	}
}

// linkFd gives the open file fd the name name in dir. AT_EMPTY_PATH needs
// CAP_DAC_READ_SEARCH; /proc/self/fd works for everyone else.
func linkFd(fd, dir int, name string) error {
	err := unix.Linkat(fd, "", dir, name, unix.AT_EMPTY_PATH)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EPERM) {
		err = unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd), dir, name, unix.AT_SYMLINK_FOLLOW)
	}
	return err
}

// writer carries one write through admission, copy and commit.
type writer struct {
	l        *Layer
	t        *tree
	ctx      context.Context
	path     string // the file written, in the tree
	block    uint64
	cutoff   time.Time // the last walk's start less the ctime lag: what is unchanged since, the walk counted
	replaced Replaced  // what the rename replaced and unlinked, to be credited
	inodes   uint64    // new inodes: the file if new, plus missing directories
	dirBytes uint64    // blocks of the missing directories
	made     bool      // the missing directories were made (some may be)
	grown    uint64    // what the names this write added grew their directories by, measured
	temp     string
	top      *os.File // the tree's top directory, where a named temporary file lives
	file     *os.File
	fd       int
	named    bool // the file has the temporary name (else it is unnamed or placed)

	acct    Write // the write's accounting: admission, reservation, ledger
	size    int64 // the body's declared length, -1 when unknown
	written uint64
	blocks  uint64 // named: the temporary file's bytes on disk once whole (fstat), if more than written's
	// committed: the commit reached the ledger; what the write leaves
	// behind if it fails after is the commit's to keep (Undo).
	committed bool
	done      bool
	// kept: where what stood at the target when the file was exchanged
	// into place went, when it was not the file this write replaces
	// (relative to the tree); keptErr: why it stays at the temporary name.
	kept    string
	keptErr error
}

// makeDirs makes the missing directories of dir, measuring what their
// names grow the deepest directory there is by (and the tree's top, the
// same on a put into it), under the placing lock so that no other write
// of xfsq's grows them meanwhile. The new directories' own blocks are in
// dirBytes already.
func (w *writer) makeDirs(dir string) error {
	w.made = true
	var existing *os.File
	for d := dir; existing == nil; d = path.Dir(d) {
		f, err := w.t.openIn(d, unix.O_PATH|unix.O_DIRECTORY)
		switch {
		case err == nil:
			existing = f
		case d == ".":
			return pathErr(d, err)
		}
	}
	defer existing.Close()
	unlock := lockPlacing(w.l.m.Dir(), w.t.Path)
	defer unlock()
	return w.grewAround(func() error { return w.t.mkdirAll(dir) }, existing, w.top)
}

// grewAround runs op, which adds names to dirs, and adds to grown what
// dirs grew by meanwhile (each directory once, never less than nothing).
// The caller holds the tree's placing lock: what grows a directory then
// is op, or the tenant, whose growth is charged too (the safe side).
// Measured on the open directories, not their names, so that a tenant
// renaming one away cannot have another measured in its place.
func (w *writer) grewAround(op func() error, dirs ...*os.File) error {
	type dirAt struct{ dev, ino uint64 }
	before := map[dirAt]int64{}
	fds := map[dirAt]int{}
	for _, d := range dirs {
		var st unix.Stat_t
		if d != nil && unix.Fstat(int(d.Fd()), &st) == nil {
			k := dirAt{st.Dev, st.Ino}
			before[k], fds[k] = st.Blocks, int(d.Fd())
		}
	}
	err := op()
	for k, fd := range fds {
		var st unix.Stat_t
		if unix.Fstat(fd, &st) == nil && st.Blocks > before[k] {
			w.grown += uint64(st.Blocks-before[k]) * 512
		}
	}
	return err
}

// left is what a write that failed leaves in the tree all the same, and
// stays counted: the directories it made (all it meant to: a tenant's
// made meanwhile are over-counted, the safe side) and what its names grew
// directories by.
func (w *writer) left() quota.Usage {
	if !w.made {
		return quota.Usage{Bytes: w.grown}
	}
	return quota.Usage{Bytes: w.dirBytes + w.grown, Inodes: w.inodes - 1}
}

// placeFailed is the error of placing the written file at p that failed
// with err: the tree changing under it (its directory removed, a name
// taken or emptied meanwhile) is a collision to retry, a full filesystem
// or quota what it means, another device what placeErr says.
func (w *writer) placeFailed(p string, err error) error {
	switch {
	case errors.Is(err, unix.EXDEV):
		return placeErr(p, err)
	case errors.Is(err, unix.EPERM), errors.Is(err, unix.EACCES):
		return pathErr(p, err)
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.EEXIST), errors.Is(err, unix.ENOTDIR), errors.Is(err, unix.EISDIR),
		errors.Is(err, unix.ENOTEMPTY), errors.Is(err, unix.ELOOP), errors.Is(err, unix.EBUSY):
		return errkind.New(errkind.Conflict, fmt.Errorf("%s: something in the tree changed it or its directory while the file was being put in place (%v); nothing was written there, try again", p, err))
	}
	return w.mapErr(err)
}

// placeErr is the error of putting the staged file at p: a directory on
// another device than the tree's top (a btrfs subvolume) cannot take it,
// and the bare "invalid cross-device link" would not say why.
func placeErr(p string, err error) error {
	if errors.Is(err, unix.EXDEV) {
		return &PathError{Path: p, Reason: "its directory is on another device than the tree's top, where uploads are staged (a btrfs subvolume): xfsq cannot write into it; put the file outside the subvolume"}
	}
	return pathErr(p, err)
}

// alloc is what n bytes of content take on disk, in whole blocks.
func (w *writer) alloc(n uint64) uint64 { return (n + w.block - 1) / w.block * w.block }

// need is the bytes n bytes of content take: a replacement's too, whole
// (see Put).
func (w *writer) need(n uint64) uint64 { return w.alloc(n) }

// credit is what the rename's unlinking of gone frees, as far as the
// tree's usage counted it: its blocks if the last walk counted it (old,
// what stood at the name just before the rename, is gone itself and was
// last changed before the walk began, and so were the directories it is
// in: walked says so), else only as far as the ledger row of a write
// through xfsq counted that inode (project.Replaced).
func (w *writer) credit(gone, old *unix.Stat_t, walked bool) Replaced {
	if walked && sameInode(gone, old) && time.Unix(old.Ctim.Sec, old.Ctim.Nsec).Before(w.cutoff) {
		return Replaced{Counted: quota.Usage{Bytes: uint64(min(old.Blocks, gone.Blocks)) * 512, Inodes: 1}}
	}
	if gone.Dev != w.t.dir.Dev() {
		return Replaced{} // its number would name another inode of the tree's
	}
	return Replaced{Ino: gone.Ino, Bytes: uint64(gone.Blocks) * 512}
}

// admit reserves what is known up front: the whole body when its size is
// known, else only the inodes.
func (w *writer) admit(size int64) error {
	fileBytes, bytes := uint64(0), w.dirBytes
	if size >= 0 {
		fileBytes, bytes = uint64(size), w.need(uint64(size))+w.dirBytes
	}
	// Every write adds a name, at its path or (a replacement) at the
	// temporary name the exchange needs: it may grow that directory by a
	// block, reserved and settled at what the link measured.
	w.acct = w.t.StartWrite(w.t.label, WriteLimits{MaxFileBytes: w.l.MaxFileBytes, RootBudget: w.l.RootBudget, TTL: w.l.TTL, SoftGrace: w.l.SoftGrace},
		w.inodes, w.block, path.Join(w.t.Path, w.temp))
	return w.acct.Reserve(w.ctx, fileBytes, bytes, w.dirBytes)
}

// grow asks for more room for a streaming body: the next step if it can,
// else whatever the allowance still holds. It returns false when nothing
// more can be had.
func (w *writer) grow() (bool, error) {
	if !w.acct.CanGrow() {
		return false, nil
	}
	try := func(n uint64) error { return w.acct.Grow(w.ctx, n) }
	step := (min(max(firstStep, w.written), maxStep) + w.block - 1) / w.block * w.block
	err := try(step)
	if err == nil {
		return true, nil
	}
	var le *quota.LimitError
	if !errors.As(err, &le) {
		return false, err
	}
	// Less than a step is left: take exactly what is, in whole blocks.
	if le.Max > le.Used {
		if rest := (le.Max - le.Used) / w.block * w.block; rest > 0 && rest < step && try(rest) == nil {
			return true, nil
		}
	}
	return false, nil
}

// copy streams the body into the temporary file within what is reserved.
func (w *writer) copy(r io.Reader, size int64) error {
	buf := make([]byte, 1<<20)
	for {
		// Room: content bytes that fit in the reservation.
		room := w.acct.Held()/w.block*w.block - min(w.written, w.acct.Held()/w.block*w.block)
		if w.l.MaxFileBytes > 0 {
			room = min(room, w.l.MaxFileBytes-min(w.written, w.l.MaxFileBytes))
		}
		if size >= 0 {
			room = min(room, uint64(size)-w.written)
		}
		if room == 0 {
			if size >= 0 && w.written == uint64(size) {
				_, err := w.expectEOF(r, size)
				return err
			}
			if w.mayGrow() {
				more, err := w.grow()
				if err != nil {
					return err
				}
				if more {
					continue
				}
			}
			// Out of allowance: one more byte decides between done and refused.
			if more, err := w.expectEOF(r, size); err != nil || !more {
				return err
			}
		}
		n, err := r.Read(buf[:min(uint64(len(buf)), room)])
		if n > 0 {
			if _, werr := w.file.Write(buf[:n]); werr != nil {
				return w.mapErr(werr)
			}
			w.written += uint64(n)
			if err := w.acct.Renew(w.ctx); err != nil {
				return err
			}
		}
		if err == io.EOF {
			if size >= 0 && w.written != uint64(size) {
				return errkind.New(errkind.Input, fmt.Errorf("the body ended after %d of the %d bytes declared; nothing was written", w.written, size))
			}
			return nil
		}
		if err != nil {
			return readErr(w.ctx, err)
		}
	}
}

// readErr says why reading the body failed.
func readErr(ctx context.Context, err error) error {
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return fmt.Errorf("stopped before the body ended: %w; nothing was written", context.Cause(ctx))
	}
	// The sender's body is malformed or cut short (a bad chunk, a lying
	// length): bad input, not the server's failure.
	return errkind.New(errkind.Input, fmt.Errorf("reading the body: %w; nothing was written", err))
}

type readResult struct {
	n   int
	err error
}

// ctxReader lets cancellation end a body read that never returns (a
// stalled client, a stdin that never closes): the write, its reservation
// and its temporary file must not outlive the caller's interest in them.
// Each read runs in a goroutine into a buffer of its own, which an
// abandoned read keeps, so nothing is written into the caller's buffer
// after Read has returned.
type ctxReader struct {
	ctx     context.Context
	r       io.Reader
	res     chan readResult
	buf     []byte
	pending bool
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	if !c.pending {
		if len(c.buf) < len(p) {
			c.buf = make([]byte, len(p))
		}
		buf := c.buf[:len(p)]
		c.pending = true
		go func() {
			n, err := c.r.Read(buf)
			c.res <- readResult{n, err}
		}()
	}
	select {
	case <-c.ctx.Done():
		return 0, c.ctx.Err()
	case rr := <-c.res:
		c.pending = false
		return copy(p, c.buf[:rr.n]), rr.err
	}
}

// mayGrow reports whether a streaming body may ask for more room.
func (w *writer) mayGrow() bool {
	return w.acct.CanGrow() && (w.l.MaxFileBytes == 0 || w.written < w.l.MaxFileBytes)
}

// expectEOF reads one byte past the admitted length: EOF means the body
// fitted; a byte means it is over a limit, and the write is refused —
// unless room was freed while the byte was awaited (a slow body, another
// write finished meanwhile), when the byte is written and more reports
// that the body goes on.
func (w *writer) expectEOF(r io.Reader, size int64) (more bool, err error) {
	var one [1]byte
	for {
		n, err := r.Read(one[:])
		if n > 0 {
			if size >= 0 && w.written == uint64(size) {
				return false, fmt.Errorf("the body is longer than the %d bytes declared; nothing was written", size)
			}
			if w.mayGrow() {
				if grown, err := w.grow(); err != nil {
					return false, err
				} else if grown {
					if _, err := w.file.Write(one[:]); err != nil {
						return false, w.mapErr(err)
					}
					w.written++
					return true, nil
				}
			}
			return false, w.refusal(w.written + 1)
		}
		if err == io.EOF {
			return false, nil
		}
		if err != nil {
			return false, readErr(w.ctx, err)
		}
	}
}

// refusal builds the limit error for a body of at least n bytes.
func (w *writer) refusal(n uint64) error { return w.acct.Refusal(w.ctx, n, w.need(n)) }

// mapErr turns the kernel's refusal during a write into what it means (see
// project.Write.KernelRefusal).
func (w *writer) mapErr(err error) error {
	if errkind.Of(err) != errkind.Internal {
		return err // classified already (a path's error from mkdirAll)
	}
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
		return pathErr(w.path, err) // an attribute the tree's owner set: a conflict
	}
	need := uint64(0)
	if w.size >= 0 {
		need = w.alloc(uint64(w.size)) - min(w.alloc(w.written), w.alloc(uint64(w.size)))
	}
	return w.acct.KernelRefusal(err, need, w.alloc(w.written+1))
}

// delta is what the commit adds to the ledger: the new file's blocks
// whole, before it replaces anything. What it replaces is credited after
// the rename (freed, by Placed), as measured then, so that the ledger never counts
// an old file as gone before it is, nor twice when concurrent overwrites
// of one path each saw it as the file they would replace.
func (w *writer) delta() int64 {
	return int64(max(w.alloc(w.written), w.blocks)) + int64(w.dirBytes)
}

// abandon removes the temporary file and releases the reservation of a
// write that did not finish. A tenant that took the named temporary file
// elsewhere in the tree while the body streamed keeps an empty file: what
// it held goes (it is xfsq's, written through xfsq's own descriptor), its
// inode stays counted.
func (w *writer) abandon() {
	if w.top != nil && !w.done && !w.committed {
		w.unlinkTemp()
		var mine unix.Stat_t
		linked := w.fd >= 0 && unix.Fstat(w.fd, &mine) == nil && mine.Nlink > 0
		if linked {
			unix.Ftruncate(w.fd, 0)
		}
		// Counted even when the client went away: the inode is there, and
		// so are the directories made and grown for the write.
		if left := w.left(); linked || left.Bytes > 0 {
			ctx := context.WithoutCancel(w.ctx)
			if w.acct.Commit(ctx, int64(left.Bytes-w.grown), 0) == nil {
				w.acct.Placed(ctx, Replaced{}, w.grown, time.Now())
			}
		}
	}
	if w.file != nil {
		w.file.Close()
	}
	if w.top != nil {
		w.top.Close()
	}
	if w.done {
		return
	}
	w.acct.Release(w.ctx)
}

// missingDirs counts the directories above p that do not exist yet. The
// deepest that does must be a directory on the tree's device: what is made
// below it is on its device, and the staged file, at the tree's top, can be
// renamed only within one (a btrfs subvolume is another). That is known
// before the body is read, so a write that cannot land is refused before a
// byte of it is sent or a directory made for it.
func missingDirs(t *tree, p string) (uint64, error) {
	var n uint64
	for d := path.Dir(p); d != "."; d = path.Dir(d) {
		fi, err := t.lstat(d)
		if errors.Is(err, os.ErrNotExist) {
			n++
			continue
		}
		if err != nil {
			return 0, pathErr(d, err)
		}
		if !fi.IsDir() && fi.Mode()&fs.ModeSymlink == 0 {
			return 0, &PathError{Path: d, Reason: "it is not a directory"}
		}
		// A link (one that stays inside the tree) is judged by where it
		// leads, as the write will resolve it.
		st, ok := fi.Sys().(*unix.Stat_t)
		if fi.Mode()&fs.ModeSymlink != 0 {
			var ds unix.Stat_t
			if f, err := t.openDir(d); err == nil {
				ok = unix.Fstat(int(f.Fd()), &ds) == nil
				st = &ds
				f.Close()
			}
		}
		if ok && st.Dev != t.dir.Dev() {
			return 0, placeErr(p, unix.EXDEV)
		}
		break
	}
	return n, nil
}

// blockSize is the allocation unit of the filesystem dirfd is on.
func blockSize(dirfd int) uint64 {
	var st unix.Statfs_t
	if err := unix.Fstatfs(dirfd, &st); err != nil || st.Bsize <= 0 {
		return 4096
	}
	return uint64(st.Bsize)
}
