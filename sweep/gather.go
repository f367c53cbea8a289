package sweep

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/internal/gitindex"
	"github.com/xfsq/xfsq/internal/nomount"
	"github.com/xfsq/xfsq/internal/saferm"
	"github.com/xfsq/xfsq/inventory"
)

// Gatherer walks trees for the planner. It only reads; a path that changes
// while it looks can only be mis-measured, never deleted (the executor
// re-checks everything through descriptors).
type Gatherer struct {
	// Root is the sandbox root. Each tree is opened beneath it without
	// links: a tree root that is a symlink (to another project's tree, say)
	// is refused, never walked.
	Root  *saferm.Dir
	Globs []string // workspace trash globs

	indexBudget int64 // the index bytes one workspace's walk parses; 0: gitindex.DefaultBudget
}

// Why an entry is never offered or deleted, whatever the policy, as the
// walks find it.
const (
	protectedSymlink = "symlink"
	protectedOtherFS = "other filesystem"
)

// TreeRefusedError is a tree root that is not a real directory reached
// without links from the sandbox root.
type TreeRefusedError struct {
	Tree string
	Err  error
}

func (e *TreeRefusedError) Error() string {
	return "tree " + e.Tree + " is not a real directory reached without links (a symlink or a mount?); it is not swept: " + e.Err.Error()
}
func (e *TreeRefusedError) Unwrap() error { return e.Err }

// openTree opens a tree beneath the root; a tree that does not exist is
// nil without an error.
func (g *Gatherer) openTree(treeRel string) (*saferm.Dir, error) {
	d, err := g.Root.OpenDir(treeRel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case errors.Is(err, saferm.ErrUnsafe):
		return nil, &TreeRefusedError{treeRel, err}
	}
	return d, err
}

// measure gives the entry rel beneath dir (never followed): its allocated
// bytes and newest mtime (inside it, for a directory), or why it must stay
// (a symlink, a mount point or another mount). The planner's walks and the
// executor's re-check both see entries through it. Entry.Path is relative
// to the sandbox root.
func measure(dir *saferm.Dir, rel string) (Entry, error) {
	st, err := dir.Lstat(rel)
	if err != nil {
		return Entry{}, err
	}
	// An mtime stamped in the future must not pin the entry (inventory.Mtime).
	e := Entry{Path: path.Join(dir.Path(), rel), Dir: st.IsDir(), Newest: time.Unix(0, min(st.MtimeNano(), st.CtimeNano())).UTC()}
	e.LastUsed = e.Newest
	// A file's last read counts as a use (inventory.LastUse, which also
	// says why a directory's atime does not and a future one is ignored).
	if a := time.Unix(0, st.AtimeNano()).UTC(); !st.IsDir() && !st.IsSymlink() && a.After(e.LastUsed) && !a.After(time.Now().Add(time.Minute)) {
		e.LastUsed = a
	}
	switch {
	case st.IsSymlink():
		e.Protected = protectedSymlink
	case st.OtherMount:
		e.Protected = protectedOtherFS
	case st.IsDir():
		// inventory's one measure, of the directory opened beneath the
		// held descriptor (no symlink on the way, whatever was renamed
		// above dir or swapped in since the lstat), so that a sweep's
		// figures and the fallback ledger's credit cannot disagree.
		u, err := measureDir(dir, rel)
		if err != nil {
			return e, err
		}
		e.Bytes, e.Newest, e.LastUsed = u.Bytes, u.Newest, u.LastUse
	default:
		e.Bytes = st.Blocks * 512
	}
	return e, nil
}

// measureDir measures the directory rel beneath dir (inventory.MeasureFile).
func measureDir(dir *saferm.Dir, rel string) (inventory.Usage, error) {
	sub, err := dir.OpenDir(rel)
	if err != nil {
		return inventory.Usage{}, err
	}
	defer sub.Close()
	// An *os.File of its own: sub keeps and closes its descriptor.
	fd, err := unix.FcntlInt(uintptr(sub.Fd()), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return inventory.Usage{}, &os.PathError{Op: "dup", Path: sub.Path(), Err: err}
	}
	f := os.NewFile(uintptr(fd), sub.Path())
	defer f.Close()
	return inventory.MeasureFile(f)
}

// TopLevel offers every entry directly under a tree (cache entries,
// scratch runs), with the tree's total.
func (g *Gatherer) TopLevel(a, treeRel string) (Tree, error) {
	t := Tree{Area: a, Path: treeRel}
	tree, err := g.openTree(treeRel)
	if tree == nil || err != nil {
		return t, err
	}
	defer tree.Close()
	st, err := tree.Lstat(".")
	if err == nil {
		t.Bytes = st.Blocks * 512
	}
	names, err := tree.Names()
	sort.Strings(names)
	if err != nil {
		return t, err
	}
	for _, name := range names {
		e, err := measure(tree, name)
		if err != nil {
			continue // vanished or unreadable
		}
		if a == area.Scratch {
			e.Run = name
		}
		t.Bytes += e.Bytes
		t.Entries = append(t.Entries, e)
	}
	return t, nil
}

// maxWalkDepth bounds how deep the workspace walk goes (it holds one
// descriptor per level): a directory deeper is not examined, so neither it
// nor anything above it is offered whole.
const maxWalkDepth = 256

// gitRepo is a repository the workspace walk is inside.
type gitRepo struct {
	root string // workspace-relative; "." is the tree itself
	ix   *gitindex.Index
}

// wsWalk is one walk of a workspace tree.
type wsWalk struct {
	g       *Gatherer
	tree    *saferm.Dir // the tree's root: what is on its mount is walked
	rf      *gitindex.Finder
	treeRel string
	workers chan struct{} // a slot per goroutine walking besides the caller's

	mu      sync.Mutex
	links   map[[2]uint64]bool // inodes with several links, counted once
	skipped []Skip
}

// subdir is a subdirectory being walked, maybe by another goroutine.
type subdir struct {
	e     Entry
	whole bool // offered whole if clean
	keep  bool // tracked or a submodule: what holds it is not clean
	never bool // uploads/ or inbox/: walked for repositories, never offered
	res   dirResult
	err   error
	done  chan struct{} // nil: walked inline
}

// dirResult is what the walk found in and below one directory.
type dirResult struct {
	entries []Entry // offered below it
	// clean: nothing in it must stay (no repository, nothing tracked,
	// nothing unreadable, no mount point), so it may be offered whole.
	clean  bool
	bytes  uint64
	newest time.Time
}

func (w *wsWalk) account(r *dirResult, st *unix.Stat_t) {
	if t := time.Unix(0, inventory.Mtime(st)).UTC(); t.After(r.newest) {
		r.newest = t
	}
	if st.Nlink > 1 && st.Mode&unix.S_IFMT != unix.S_IFDIR {
		k := [2]uint64{st.Dev, st.Ino}
		w.mu.Lock()
		seen := w.links[k]
		w.links[k] = true
		w.mu.Unlock()
		if seen {
			return
		}
	}
	r.bytes += uint64(st.Blocks) * 512
}

func (w *wsWalk) skip(rel, reason string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.skipped = append(w.skipped, Skip{Path: path.Join(w.treeRel, rel), Reason: reason})
}

// openDirAt opens the directory name in dirfd, refusing a symlink and a
// mount point (a tenant's FUSE server, mounted there since the name was
// looked at, is never asked).
func openDirAt(dirfd int, name string) (*os.File, error) {
	fd, err := nomount.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	return os.NewFile(uintptr(fd), name), nil
}

// within is p relative to the repository root root (both workspace-relative).
func within(root, p string) string {
	if root == "." {
		return p
	}
	return p[len(root)+1:]
}

// Workspace offers the workspace entries that trash globs name, in one
// walk that also finds every git repository (a .git directory or file in
// any directory, a submodule's gitlink) and reads its index. Nothing
// tracked is offered, nor a .git, nor a directory holding a repository or
// a tracked file anywhere below (its other entries are offered instead),
// nor anything in a repository whose index cannot be read (the reason is
// in the tree's Skipped). Inside a repository, globs apply to paths from
// its root: a repository whose root is named dist/ is not trash.
func (g *Gatherer) Workspace(ctx context.Context, treeRel string) (Tree, error) {
	t := Tree{Area: area.Workspace, Path: treeRel}
	tree, err := g.openTree(treeRel)
	if tree == nil || err != nil {
		return t, err
	}
	defer tree.Close()
	fd, err := unix.Dup(tree.Fd())
	if err != nil {
		return t, err
	}
	top := os.NewFile(uintptr(fd), treeRel)
	defer top.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return t, err
	}
	rf := gitindex.NewFinder(ctx, fd, gitindex.Options{Budget: g.indexBudget})
	w := &wsWalk{g: g, tree: tree, rf: rf, treeRel: treeRel, links: map[[2]uint64]bool{}, workers: make(chan struct{}, max(3, 2*runtime.GOMAXPROCS(0)-1))}
	res, err := w.dir(ctx, top, ".", &st, nil, false, false, false, 0)
	if err != nil {
		return t, err
	}
	if why := rf.ProtectAll(); why != "" {
		t.Skipped = []Skip{{Path: treeRel, Reason: why}}
		return t, nil
	}
	t.Entries = res.entries
	protectGitDirs(t.Entries, treeRel, rf.GitDirs())
	slices.SortFunc(w.skipped, func(a, b Skip) int { return strings.Compare(a.Path, b.Path) })
	t.Skipped = w.skipped
	return t, nil
}

// protectGitDirs protects every offered entry that is, holds or lies in a
// git directory a .git file or commondir leads to: the walk may have found
// it, in a trash directory, before the pointer. Such an entry stays whole
// (its other contents too: the walk offered it as one).
func protectGitDirs(entries []Entry, treeRel string, gitDirs map[string]string) {
	for i, e := range entries {
		if e.Protected != "" {
			continue
		}
		rel := strings.TrimPrefix(e.Path, treeRel+"/")
		for gd, root := range gitDirs {
			if gd == "." || rel == gd || strings.HasPrefix(gd, rel+"/") || strings.HasPrefix(rel, gd+"/") {
				entries[i].Protected = fmt.Sprintf("the git directory of the repository at %s", path.Join(treeRel, root))
				break
			}
		}
	}
}

// dirScope is what a directory's walk knows of where it is: rel in the
// workspace, the repositories around it (inner: the innermost's root),
// whether a trash glob names it or a directory above it, whether its
// caller offers it whole if clean, and how deep it is.
type dirScope struct {
	rel         string
	repos       []*gitRepo
	inner       string
	inTrash     bool
	collapsible bool
	depth       int
}

// dir walks the open directory f (rel in the workspace, self its stat)
// inside the repositories repos. inTrash: a trash glob names it or a
// directory above it; collapsible: its caller offers it whole if it is
// clean, so the entries below need not be kept; submodule: a gitlink
// names it, so a repository must be there. Its phases: the repository
// it may be (repository), the git directory it may be (gitDirHere), each
// name in it (entry, which starts the walks below), and what those walks
// found (collect).
func (w *wsWalk) dir(ctx context.Context, f *os.File, rel string, self *unix.Stat_t, repos []*gitRepo, inTrash, collapsible, submodule bool, depth int) (dirResult, error) {
	res := dirResult{clean: true}
	w.account(&res, self)
	if err := ctx.Err(); err != nil {
		return res, err
	}
	names, err := f.Readdirnames(-1)
	if err != nil {
		res.clean = false // unreadable: nothing offered from it, nor above it
		return res, nil
	}
	fd := int(f.Fd())
	s := dirScope{rel: rel, repos: repos, inner: ".", inTrash: inTrash, collapsible: collapsible, depth: depth}
	if done, err := w.repository(fd, names, &s, submodule, &res); done || err != nil {
		return res, err
	}
	gitDir := w.gitDirHere(f, names, rel, &res)
	if len(s.repos) > 0 {
		s.inner = s.repos[len(s.repos)-1].root
	}
	var subs []*subdir
	for _, name := range names {
		if name == ".git" {
			continue
		}
		if sd := w.entry(ctx, fd, s, name, &res); sd != nil {
			subs = append(subs, sd)
		}
	}
	if err := collect(subs, &res); err != nil {
		return res, err
	}
	if gitDir {
		res.entries = nil // walked for repositories below, nothing offered
	}
	if s.collapsible && res.clean {
		res.entries = nil // the caller offers this directory whole
	}
	return res, nil
}

// repository is the phase for a directory that is, or must be, a
// repository's root. A readable .git adds the repository to s, and
// nothing below it is trash or offered whole; one that cannot be read,
// or a submodule's directory without one, protects the directory whole
// (done: nothing more is walked).
func (w *wsWalk) repository(fd int, names []string, s *dirScope, submodule bool, res *dirResult) (done bool, err error) {
	switch {
	case slices.Contains(names, ".git"):
		ix, why, err := w.rf.Read(fd, s.rel)
		if err != nil {
			return true, err
		}
		res.clean = false
		if why != "" {
			w.skip(s.rel, "git repository: "+why+": its whole working tree is protected")
			return true, nil
		}
		s.repos = append(slices.Clip(s.repos), &gitRepo{root: s.rel, ix: ix})
		s.inTrash, s.collapsible = false, false
	case submodule:
		res.clean = false
		if len(names) > 0 {
			w.skip(s.rel, "submodule (a gitlink) without a repository that can be read: the whole directory is protected")
		}
		return true, nil
	}
	return false, nil
}

// gitDirHere says whether the directory is a git directory. One holding
// HEAD, objects and refs is one git finds when run inside it, whatever its
// name (git init --bare, a separate git dir): nothing in it is trash, and
// its config may set core.worktree, which puts tracked files anywhere in
// the workspace. With a .git in it too: git falls back to taking the
// directory itself when that .git is nothing it accepts (an empty
// directory). Its objects and refs may be in a common directory its
// commondir file names (a linked worktree's git directory), as git allows.
func (w *wsWalk) gitDirHere(f *os.File, names []string, rel string, res *dirResult) bool {
	if !slices.Contains(names, "HEAD") ||
		!((slices.Contains(names, "objects") && slices.Contains(names, "refs")) || slices.Contains(names, "commondir")) {
		return false
	}
	res.clean = false
	if w.rf.SetsWorktree(f, rel) {
		w.rf.Protect(fmt.Sprintf("the git directory at %s sets core.worktree (or its config cannot be read), so its tracked files may be anywhere in the workspace: the whole workspace is protected", path.Join(w.treeRel, rel)))
	}
	return true
}

// entry looks at one name of the directory: a file is accounted, and
// offered when it is trash; a directory that must not be walked is
// protected; any other is walked (descend) and returned for collect.
func (w *wsWalk) entry(ctx context.Context, fd int, s dirScope, name string, res *dirResult) *subdir {
	// uploads/ and inbox/ are never swept, but walked all the same: a
	// repository there may set core.worktree elsewhere, or keep its
	// common directory in a trash directory.
	never := s.rel == "." && area.IsSkeleton(area.Workspace, name)
	sub := name
	if s.rel != "." {
		sub = s.rel + "/" + name
	}
	if w.tree.OtherMountAt(fd, name) {
		// Told before the stat, which would ask the mounted filesystem
		// (a tenant's FUSE server may never answer) for what a mount
		// point does not need: it is protected whatever it is.
		res.clean = false
		if s.inTrash || MatchGlob(w.g.Globs, within(s.inner, sub), true) != "" || MatchGlob(w.g.Globs, within(s.inner, sub), false) != "" {
			res.entries = append(res.entries, Entry{Path: path.Join(w.treeRel, sub), Dir: true, Protected: protectedOtherFS})
		}
		return nil
	}
	var st unix.Stat_t
	if err := nomount.Lstat(fd, name, &st); err != nil {
		if !errors.Is(err, unix.ENOENT) {
			res.clean = false
		}
		return nil
	}
	tracked, gitlink, sparse := false, false, false
	for _, r := range s.repos {
		rp := within(r.root, sub)
		tracked = tracked || r.ix.Tracks(rp)
		gitlink = gitlink || r.ix.Gitlink(rp)
		sparse = sparse || r.ix.Sparse(rp)
	}
	typ := st.Mode & unix.S_IFMT
	isDir := typ == unix.S_IFDIR
	trash := !never && (s.inTrash || MatchGlob(w.g.Globs, within(s.inner, sub), isDir) != "")
	e := Entry{Path: path.Join(w.treeRel, sub), Dir: isDir, Newest: time.Unix(0, inventory.Mtime(&st)).UTC()}
	// protect keeps a directory the walk does not enter: what holds it is
	// not clean, and it is offered, protected, when it is trash.
	protect := func(why string) {
		res.clean = false
		if trash {
			e.Protected = why
			res.entries = append(res.entries, e)
		}
	}
	switch {
	case !isDir:
		before := res.bytes
		w.account(res, &st)
		if tracked {
			res.clean = false
		}
		if !trash {
			return nil
		}
		e.Bytes = res.bytes - before
		switch {
		case tracked:
			e.Protected = "git-tracked"
		case typ == unix.S_IFLNK:
			e.Protected = protectedSymlink
		}
		res.entries = append(res.entries, e)
	case w.tree.OtherMountAt(fd, name):
		protect(protectedOtherFS)
	case sparse:
		protect("git-tracked (a sparse directory: all of it)")
	case s.depth >= maxWalkDepth:
		// Unexamined, it may hold a repository whose core.worktree puts
		// tracked files anywhere.
		w.rf.Protect(fmt.Sprintf("%s is more than %d directories deep, so what is below it is not examined for git repositories, whose tracked files may be anywhere (core.worktree): the whole workspace is protected", path.Join(w.treeRel, sub), maxWalkDepth))
		protect(fmt.Sprintf("more than %d directories deep: not examined", maxWalkDepth))
	default:
		sd := &subdir{e: e, whole: trash && !tracked && !gitlink, keep: tracked || gitlink, never: never}
		return w.descend(ctx, fd, name, sub, &st, s, sd, trash, gitlink, res)
	}
	return nil
}

// descend opens the directory name (sub in the workspace, st its stat when
// it was looked at)
// and walks it as sd, in parallel while workers are free; nil when it
// cannot be opened or was swapped since.
func (w *wsWalk) descend(ctx context.Context, fd int, name, sub string, st *unix.Stat_t, s dirScope, sd *subdir, trash, gitlink bool, res *dirResult) *subdir {
	child, err := openDirAt(fd, name)
	if err != nil {
		if !errors.Is(err, unix.ENOENT) {
			res.clean = false
		}
		return nil
	}
	var cst unix.Stat_t
	if err := unix.Fstat(int(child.Fd()), &cst); err != nil || cst.Ino != st.Ino || cst.Dev != st.Dev {
		child.Close() // swapped since it was looked at: leave it, and what holds it
		res.clean = false
		return nil
	}
	walk := func() {
		sd.res, sd.err = w.dir(ctx, child, sub, &cst, s.repos, trash, sd.whole, gitlink, s.depth+1)
		child.Close()
	}
	// Directories are walked in parallel while workers are free, as
	// inventory walks them: a sequential walk of a large dist/ cost
	// more than the parallel measure it replaced.
	select {
	case w.workers <- struct{}{}:
		sd.done = make(chan struct{})
		go func() {
			defer close(sd.done)
			defer func() { <-w.workers }()
			walk()
		}()
	default:
		walk()
	}
	return sd
}

// collect waits for the walks below the directory and joins what they
// found into res: a clean directory offered whole is one entry, any other
// gives what was offered below it. The error is the first walk's.
func collect(subs []*subdir, res *dirResult) error {
	var firstErr error
	for _, sd := range subs {
		if sd.done != nil {
			<-sd.done
		}
		if sd.err != nil {
			firstErr = cmp.Or(firstErr, sd.err)
			continue
		}
		cr := sd.res
		res.bytes += cr.bytes
		if cr.newest.After(res.newest) {
			res.newest = cr.newest
		}
		switch {
		case sd.never:
			// Walked for its repositories only: nothing in it is offered.
		case sd.whole && cr.clean:
			sd.e.Bytes, sd.e.Newest = cr.bytes, cr.newest
			res.entries = append(res.entries, sd.e)
		default:
			res.entries = append(res.entries, cr.entries...)
		}
		if !cr.clean || sd.keep {
			res.clean = false
		}
	}
	return firstErr
}
