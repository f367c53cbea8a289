package gitindex

import (
	"bytes"
	"cmp"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/internal/nomount"
)

// Everything below is read from a tenant's tree: nothing is opened by a
// path that could cross a symlink, nothing that could block (a FIFO at
// .git/index hung every sweep), nothing that is not a regular file.
const (
	dirOpenFlags  = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	fileOpenFlags = unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_NOCTTY | unix.O_CLOEXEC
	// maxSmallFile bounds a .git file, a commondir file or a config.
	maxSmallFile = 1 << 20
)

// openDirAt opens the directory name in dirfd, refusing a symlink.
func openDirAt(dirfd int, name string) (*os.File, error) {
	fd, err := nomount.Openat(dirfd, name, dirOpenFlags)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	return os.NewFile(uintptr(fd), name), nil
}

// openRegularAt opens name in dirfd for reading if it is a regular file of
// at most limit bytes, and gives its size. It is looked at before it is
// opened (a device is never opened) and again after (the same inode, still
// a regular file): O_NONBLOCK and O_NOFOLLOW cover what changes between.
func openRegularAt(dirfd int, name string, limit int64) (*os.File, int64, error) {
	var before, st unix.Stat_t
	if err := nomount.Lstat(dirfd, name, &before); err != nil {
		return nil, 0, &os.PathError{Op: "stat", Path: name, Err: err}
	}
	if before.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, 0, fmt.Errorf("%s is %s, not a regular file", name, area.FileKind(before.Mode))
	}
	fd, err := nomount.Openat(dirfd, name, fileOpenFlags)
	if err != nil {
		return nil, 0, &os.PathError{Op: "open", Path: name, Err: err}
	}
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, 0, &os.PathError{Op: "fstat", Path: name, Err: err}
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG || st.Dev != before.Dev || st.Ino != before.Ino:
		unix.Close(fd)
		return nil, 0, fmt.Errorf("%s changed while it was opened", name)
	case st.Size > limit:
		unix.Close(fd)
		return nil, 0, fmt.Errorf("%s is %d bytes, more than the %d read at most", name, st.Size, limit)
	}
	// A regular file ignores O_NONBLOCK; clearing it keeps Go's poller out.
	unix.SetNonblock(fd, false)
	return os.NewFile(uintptr(fd), name), st.Size, nil
}

// readSmallAt reads a small regular file in dirfd whole.
func readSmallAt(dirfd int, name string) ([]byte, error) {
	f, _, err := openRegularAt(dirfd, name, maxSmallFile)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxSmallFile))
}

// Finder opens the repositories of one workspace tree: every path it
// follows stays inside the tree and crosses no symlink. It is safe for
// the goroutines of one walk at once.
type Finder struct {
	ctx    context.Context
	treeFd int      // the workspace tree
	abs    []string // the tree's absolute paths, as a .git file may name them
	budget int64    // at most this many index bytes parsed, and path bytes decoded

	mu sync.Mutex
	// protectAll, once set, is why nothing of the workspace may be offered
	// (a repository whose working tree is elsewhere).
	protectAll string
	// gitDirs are the git directories (and common directories) that .git
	// files and commondir files lead to, workspace-relative: such a
	// directory has no entry named .git to tell it (git init
	// --separate-git-dir puts it anywhere), so the walk may have found it
	// in a trash directory before the .git file pointing at it.
	gitDirs map[string]string // git directory -> the repository's root

	// indexes, when not nil, keeps every index read by its file's
	// identity: the executor reads a repository's index again before each
	// entry it deletes, and an index git has not rewritten since (git
	// writes a new file and renames it over) need not be parsed again.
	indexes map[indexStamp]*Index
	// splits keeps, likewise, each split index read by its file's
	// identity, with the shared index it was merged with: the pair again
	// is the same index.
	splits map[indexStamp]splitRead
	// parsed counts, per repository root, the indexes parsed anew while
	// indexes was kept: one rewritten between every two entries would be
	// parsed (up to 128 MiB) once per entry, a tenant's way to stall a
	// sweep of every project.
	parsed map[string]int
	// parsedBytes is how much index this finder has parsed: at most its
	// budget (Options.Budget), so that a tenant's copies or links of one
	// large index cannot make a sweep spend minutes and gigabytes on it.
	parsedBytes int64
	// decodedBytes is what the paths of the indexes parsed come to, as
	// they are read: at most the budget too.
	decodedBytes atomic.Int64
}

// errDecodedBudget stops a parse past the walk's budget of paths.
var errDecodedBudget = errors.New("past the budget of index paths")

// DefaultBudget bounds the index bytes one walk (or one execution)
// parses over all the repositories of a workspace: two of the largest
// index read at all. Past it the whole workspace is protected.
const DefaultBudget int64 = 2 * maxIndexBytes

// Options configure a Finder.
type Options struct {
	// Keep keeps every index read by its file's identity, for a reader
	// that reads a repository's index again and again (the executor,
	// before each entry it deletes): an unchanged index is not parsed
	// again, and Parsed counts those that were.
	Keep bool
	// Budget bounds the index bytes parsed, and the path bytes they
	// decode to, over the finder's life; 0 is DefaultBudget.
	Budget int64
}

// NewFinder reads the repositories of the workspace tree open at treeFd
// (the caller keeps it open while the finder is used). ctx stops a parse
// of a large index part-way.
func NewFinder(ctx context.Context, treeFd int, o Options) *Finder {
	rf := &Finder{ctx: ctx, treeFd: treeFd, budget: cmp.Or(o.Budget, DefaultBudget)}
	if o.Keep {
		rf.indexes, rf.parsed = map[indexStamp]*Index{}, map[string]int{}
	}
	// A .git file may name the tree by its absolute path: the path the
	// kernel resolved for the descriptor held, so a link cannot fake it.
	if abs, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", treeFd)); err == nil {
		rf.abs = []string{abs}
	}
	return rf
}

// ProtectAll is why nothing of the workspace may be deleted, or "": a
// repository whose tracked files may be anywhere in it (core.worktree), or
// indexes past the budget.
func (rf *Finder) ProtectAll() string {
	rf.mu.Lock()
	defer rf.mu.Unlock()
	return rf.protectAll
}

// Protect keeps the whole workspace, saying why (the first reason stays):
// for what the caller's own walk finds that makes any repository's
// tracked files unknown.
func (rf *Finder) Protect(why string) { rf.protect(why) }

// GitDirs are the git directories (and common directories) that the .git
// files and commondir files read lead to, workspace-relative, each with
// its repository's root: the walk may have found one before its pointer.
func (rf *Finder) GitDirs() map[string]string {
	rf.mu.Lock()
	defer rf.mu.Unlock()
	return maps.Clone(rf.gitDirs)
}

// Parsed is how often the index of the repository at rel was parsed anew
// (with Options.Keep; 0 without).
func (rf *Finder) Parsed(rel string) int {
	rf.mu.Lock()
	defer rf.mu.Unlock()
	return rf.parsed[rel]
}

// SetsWorktree reports whether the git directory open at gitdir (rel in
// the workspace) has a config that sets core.worktree, or one that cannot
// be read: the tracked files of the repository it belongs to may be
// anywhere in the workspace.
func (rf *Finder) SetsWorktree(gitdir *os.File, rel string) bool {
	return rf.worktreeElsewhere(gitdir, rel, "\x00")
}

// splitRead is a split index as read: the shared index's name and
// identity then, and the merged result.
type splitRead struct {
	shared string
	stamp  indexStamp
	ix     *Index
}

// indexStamp tells one version of an index file (and of its shared index,
// for a split one) from every other: a tenant can set an mtime back, never
// a ctime.
type indexStamp struct {
	dev, ino     uint64
	size         int64
	mtime, ctime int64
	hashLen      int
}

func stampOf(st *unix.Stat_t, hashLen int) indexStamp {
	return indexStamp{dev: st.Dev, ino: st.Ino, size: st.Size, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano(), hashLen: hashLen}
}

// commonTarget is a commondir file's path as git reads it: up to a NUL,
// without its line ends (other blanks are part of the path).
func commonTarget(data []byte) string {
	if i := strings.IndexByte(string(data), 0); i >= 0 {
		data = data[:i]
	}
	return strings.TrimRight(string(data), "\r\n")
}

// maxPointerBytes is the longest path a .git file or commondir may name:
// the kernel's PATH_MAX, past which git cannot open it either.
const maxPointerBytes = 4096

// unknown is the reason a repository at rel could not be read before its
// config said where its working tree is: core.worktree may put its tracked
// files anywhere in the workspace, so the whole workspace is protected.
func (rf *Finder) unknown(rel, why string) string {
	rf.protect(fmt.Sprintf("the git repository at %s cannot be read (%s), so where its tracked files are (core.worktree) is unknown: the whole workspace is protected", path.Join(rel, ".git"), why))
	return why
}

// protect keeps the whole workspace, saying why (the first reason stays).
func (rf *Finder) protect(why string) {
	rf.mu.Lock()
	defer rf.mu.Unlock()
	if rf.protectAll == "" {
		rf.protectAll = why
	}
}

// gitDirAt records rel as the git directory of the repository at root.
func (rf *Finder) gitDirAt(rel, root string) {
	rf.mu.Lock()
	defer rf.mu.Unlock()
	if rf.gitDirs == nil {
		rf.gitDirs = map[string]string{}
	}
	rf.gitDirs[rel] = root
}

// openPath opens the directory p names, relative to the directory base
// (a workspace-relative path) or absolute, one component at a time from
// the tree's own descriptor, refusing symlinks, and never above the tree.
// It gives the directory and its workspace-relative path, or why not.
func (rf *Finder) openPath(base, p string) (*os.File, string, string) {
	f, rel, why, _ := rf.openPathMissing(base, p)
	return f, rel, why
}

// openPathMissing is openPath, also saying whether it failed because a
// component (reached without any symlink) does not exist: then git finds
// nothing there either.
func (rf *Finder) openPathMissing(base, p string) (f *os.File, rel, why string, missing bool) {
	f, rel, why = rf.openPathAt(base, p, &missing)
	return f, rel, why, missing
}

// openPathAt is openPath's walk; it sets *missing as openPathMissing says.
func (rf *Finder) openPathAt(base, p string, missing *bool) (*os.File, string, string) {
	if path.IsAbs(p) {
		inside := false
		for _, a := range rf.abs {
			if rest, ok := strings.CutPrefix(p, a); ok && (rest == "" || rest[0] == '/') {
				p, inside = "."+rest, true
				break
			}
		}
		if !inside {
			return nil, "", fmt.Sprintf("it points outside the project, at %s", p)
		}
		base = "."
	}
	var comps []string
	for _, c := range strings.Split(base+"/"+p, "/") {
		if c != "" && c != "." {
			comps = append(comps, c)
		}
	}
	// Each component is opened before a later ".." may cancel it: with no
	// symlink anywhere, the kernel's ".." and the lexical one agree.
	stack := []*os.File{}
	names := []string{}
	defer func() {
		for _, f := range stack {
			f.Close()
		}
	}()
	top := func() int {
		if len(stack) == 0 {
			return rf.treeFd
		}
		return int(stack[len(stack)-1].Fd())
	}
	for _, c := range comps {
		if c == ".." {
			if len(stack) == 0 {
				return nil, "", fmt.Sprintf("it points outside the project, at %s", p)
			}
			stack[len(stack)-1].Close()
			stack, names = stack[:len(stack)-1], names[:len(names)-1]
			continue
		}
		f, err := openDirAt(top(), c)
		if err != nil {
			var errno unix.Errno
			errors.As(err, &errno)
			switch errno {
			case unix.ENOENT:
				*missing = true
				return nil, "", fmt.Sprintf("it points at %s, which does not exist", p)
			case unix.ELOOP, unix.ENOTDIR:
				return nil, "", fmt.Sprintf("it points at %s, which is not a directory reached without symlinks", p)
			}
			return nil, "", fmt.Sprintf("it points at %s, which cannot be opened: %v", p, err)
		}
		stack, names = append(stack, f), append(names, c)
	}
	if len(stack) == 0 {
		f, err := openDirAt(rf.treeFd, ".")
		if err != nil {
			return nil, "", err.Error()
		}
		return f, ".", ""
	}
	f := stack[len(stack)-1]
	stack = stack[:len(stack)-1]
	return f, strings.Join(names, "/"), ""
}

// Read reads the index of the repository whose .git entry is in the
// directory dirfd (rel in the workspace). A non-empty why says the
// repository could not be read, and so its whole working tree must stay.
// err is only cancellation.
func (rf *Finder) Read(dirfd int, rel string) (ix *Index, why string, err error) {
	var st unix.Stat_t
	if err := nomount.Lstat(dirfd, ".git", &st); err != nil {
		return nil, rf.unknown(rel, fmt.Sprintf(".git cannot be examined: %v", err)), nil
	}
	var gitdir *os.File
	gitRel := path.Join(rel, ".git")
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		if gitdir, err = openDirAt(dirfd, ".git"); err != nil {
			return nil, rf.unknown(rel, fmt.Sprintf(".git cannot be opened: %v", err)), nil
		}
	case unix.S_IFLNK:
		// git follows it; xfsq follows no link, so the config (and the
		// core.worktree it may set) stays unknown.
		return nil, rf.unknown(rel, ".git is a symlink, which xfsq does not follow"), nil
	case unix.S_IFREG:
		// A worktree's or submodule's pointer to its git directory.
		data, err := readSmallAt(dirfd, ".git")
		if err != nil {
			return nil, rf.unknown(rel, fmt.Sprintf("its .git file cannot be read: %v", err)), nil
		}
		if i := strings.IndexByte(string(data), 0); i >= 0 {
			data = data[:i] // git reads it as a C string
		}
		// As git reads it: "gitdir: " and the path, to the end but for
		// line ends; a space more is part of the path (git itself writes
		// one for --separate-git-dir "x ").
		target, ok := strings.CutPrefix(strings.TrimRight(string(data), "\r\n"), "gitdir: ")
		if !ok || target == "" {
			return nil, "its .git file is not a \"gitdir: PATH\" pointer", nil
		}
		if len(target) > maxPointerBytes {
			// Longer than any path the kernel opens: each component would
			// cost a call, a tenant's way to stall every sweep.
			return nil, rf.unknown(rel, fmt.Sprintf("its .git file points at a path of %d bytes, longer than the %d a path may have", len(target), maxPointerBytes)), nil
		}
		var why string
		var missing bool
		if gitdir, gitRel, why, missing = rf.openPathMissing(rel, target); why != "" {
			if !missing {
				// git may find it where xfsq cannot follow (through a
				// symlink, by another spelling, outside the root as the
				// sandbox names it): that git directory, and the
				// core.worktree its config may set, may be anywhere.
				return nil, rf.unknown(rel, "its .git file cannot be followed: "+why), nil
			}
			return nil, "its .git file cannot be followed: " + why, nil
		}
		rf.gitDirAt(gitRel, rel)
		// git takes a directory for a git directory only with a HEAD:
		// without one this is no repository git knows, and what it
		// holds cannot be told tracked or not.
		var head unix.Stat_t
		if err := nomount.Lstat(int(gitdir.Fd()), "HEAD", &head); err != nil {
			gitdir.Close()
			return nil, fmt.Sprintf("its .git file points at %s, which is not a git directory (no HEAD)", target), nil
		}
	default:
		return nil, fmt.Sprintf(".git is %s, which git takes for no repository", area.FileKind(st.Mode)), nil
	}
	defer gitdir.Close()
	hashLen, why := rf.objectFormat(gitdir, gitRel)
	if why != "" {
		return nil, rf.unknown(rel, why), nil
	}
	if rf.worktreeElsewhere(gitdir, gitRel, rel) {
		// git reads this index against that other directory: its tracked
		// files may be anywhere in the workspace, so none of it is trash.
		rf.protect(fmt.Sprintf("the git repository at %s sets core.worktree, so its tracked files may be anywhere in the workspace: the whole workspace is protected", path.Join(rel, ".git")))
		return nil, "it sets core.worktree", nil
	}
	gfd := int(gitdir.Fd())
	main, stamp, why, err := rf.readIndexAt(gfd, "index", hashLen)
	if err != nil || why != "" {
		return nil, why, err
	}
	if main == nil {
		return newIndex(nil), "", nil // no index yet (git init): nothing tracked
	}
	if main.cached != nil {
		return main.cached, "", nil
	}
	if rf.indexes != nil {
		rf.mu.Lock()
		rf.parsed[rel]++
		rf.mu.Unlock()
	}
	entries := main.entries
	if main.linked && main.base != nil && string(main.base) != string(make([]byte, hashLen)) {
		name := "sharedindex." + hex.EncodeToString(main.base)
		shared, sharedStamp, why, err := rf.readIndexAt(gfd, name, hashLen)
		switch {
		case err != nil:
			return nil, "", err
		case why != "":
			return nil, why, nil
		case shared == nil:
			return nil, fmt.Sprintf("its split index needs %s, which is missing", name), nil
		case string(shared.sum) != string(main.base):
			return nil, fmt.Sprintf("%s is not the shared index its name says", name), nil
		}
		if entries, err = mergeSplit(main, shared); err != nil {
			return nil, fmt.Sprintf("its split index cannot be read: %v", err), nil
		}
		ix = newIndex(entries)
		if rf.indexes != nil { // the same only with the same shared index: it may change alone
			rf.mu.Lock()
			if rf.splits == nil {
				rf.splits = map[indexStamp]splitRead{}
			}
			rf.splits[stamp] = splitRead{shared: name, stamp: sharedStamp, ix: ix}
			rf.mu.Unlock()
		}
		return ix, "", nil
	}
	ix = newIndex(entries)
	if rf.indexes != nil && !main.linked {
		rf.mu.Lock()
		rf.indexes[stamp] = ix
		rf.mu.Unlock()
	}
	return ix, "", nil
}

// readIndexAt reads one index file in the git directory; nil without a
// why: there is none. Where rf keeps indexes, one it has read in this
// version already comes back unparsed, as cached.
func (rf *Finder) readIndexAt(gitfd int, name string, hashLen int) (*indexFile, indexStamp, string, error) {
	f, size, err := openRegularAt(gitfd, name, maxIndexBytes)
	if errors.Is(err, unix.ENOENT) {
		return nil, indexStamp{}, "", nil
	}
	if err != nil {
		return nil, indexStamp{}, fmt.Sprintf("its index cannot be read: %v", err), nil
	}
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return nil, indexStamp{}, fmt.Sprintf("its index cannot be read: %v", err), nil
	}
	stamp := stampOf(&st, hashLen)
	if rf.indexes != nil && name == "index" {
		rf.mu.Lock()
		ix, ok := rf.indexes[stamp]
		split, isSplit := rf.splits[stamp]
		rf.mu.Unlock()
		if ok {
			return &indexFile{cached: ix}, stamp, "", nil
		}
		var sst unix.Stat_t
		if isSplit && nomount.Lstat(gitfd, split.shared, &sst) == nil && stampOf(&sst, hashLen) == split.stamp {
			return &indexFile{cached: split.ix}, stamp, "", nil
		}
	}
	rf.mu.Lock()
	over := rf.parsedBytes+size > rf.budget
	if !over {
		rf.parsedBytes += size
	}
	rf.mu.Unlock()
	if over {
		why := fmt.Sprintf("the git indexes of this workspace hold more than the %d MiB one sweep reads", rf.budget>>20)
		rf.protect(why + ": what they track cannot all be known, so the whole workspace is protected")
		return nil, indexStamp{}, why, nil
	}
	// What a parsed index holds in memory is its paths: charged as they
	// are read, to one budget for every walker parsing at once (nested
	// repositories' indexes stay held together, too).
	charge := func(n int64) error {
		if rf.decodedBytes.Add(n) > rf.budget {
			return errDecodedBudget
		}
		return nil
	}
	ix, err := readIndex(rf.ctx, f, size, hashLen, charge)
	switch {
	case errors.Is(err, errDecodedBudget):
		why := fmt.Sprintf("the paths of the git indexes of this workspace come to more than the %d MiB one sweep holds", rf.budget>>20)
		rf.protect(why + ": what they track cannot all be known, so the whole workspace is protected")
		return nil, indexStamp{}, why, nil
	case err != nil:
		if rf.ctx.Err() != nil {
			return nil, indexStamp{}, "", rf.ctx.Err()
		}
		return nil, indexStamp{}, fmt.Sprintf("its %s cannot be read: %v", name, err), nil
	}
	return ix, stamp, "", nil
}

// objectFormat is the length of the repository's object names:
// extensions.objectformat in the config of its common directory (a linked
// worktree's is named by its commondir file).
func (rf *Finder) objectFormat(gitdir *os.File, gitRel string) (int, string) {
	cfgDir := gitdir
	if data, err := readSmallAt(int(gitdir.Fd()), "commondir"); err == nil {
		target := commonTarget(data)
		if len(target) > maxPointerBytes {
			return 0, fmt.Sprintf("its commondir names a path of %d bytes, longer than the %d a path may have", len(target), maxPointerBytes)
		}
		common, commonRel, why, _ := rf.openPathMissing(gitRel, target)
		if why != "" {
			// Its objects and its config may be anywhere in the workspace,
			// as for a .git file that cannot be followed.
			return 0, "its commondir cannot be followed: " + why
		}
		defer common.Close()
		rf.gitDirAt(commonRel, gitRel)
		cfgDir = common
	} else if !errors.Is(err, unix.ENOENT) {
		return 0, fmt.Sprintf("its commondir cannot be read: %v", err)
	}
	cfg, err := readSmallAt(int(cfgDir.Fd()), "config")
	if errors.Is(err, unix.ENOENT) {
		return 20, "" // git's default without a config
	}
	if err != nil {
		return 0, fmt.Sprintf("its config cannot be read: %v", err)
	}
	n, err := configHashLen(cfg)
	if err != nil {
		return 0, err.Error()
	}
	return n, ""
}

// worktreeElsewhere reports whether the repository's config (its own, the
// common directory's, or a linked worktree's config.worktree) sets
// core.worktree to anything but rel, the directory holding .git (git's
// submodules point it back there): git then reads the index against that
// other directory. A config that cannot be read counts as setting it.
func (rf *Finder) worktreeElsewhere(gitdir *os.File, gitRel, rel string) bool {
	type cfgDir struct {
		f   *os.File
		rel string
	}
	dirs := []cfgDir{{gitdir, gitRel}}
	if data, err := readSmallAt(int(gitdir.Fd()), "commondir"); err == nil {
		common, commonRel, why := rf.openPath(gitRel, commonTarget(data))
		if why != "" {
			// Its config, which git reads, may set core.worktree: unknown.
			return true
		}
		defer common.Close()
		dirs = append(dirs, cfgDir{common, commonRel})
	} else if !errors.Is(err, unix.ENOENT) {
		return true
	}
	for _, d := range dirs {
		for _, name := range []string{"config", "config.worktree"} {
			cfg, err := readSmallAt(int(d.f.Fd()), name)
			if errors.Is(err, unix.ENOENT) {
				continue
			}
			if err != nil {
				return true
			}
			v, ok := configValue(cfg, "core", "worktree")
			switch {
			// git reads a relative core.worktree from the git directory
			// it runs in ($GIT_DIR), whichever config holds it: a linked
			// worktree's, not the common directory's. Read from both, it
			// must name rel both ways.
			case ok && (!rf.names(d.rel, v, rel) || !rf.names(gitRel, v, rel)):
				return true
			case !ok && worktreeKey().Match(cfg):
				// A worktree key xfsq did not find in [core]: git's
				// reader may (a continuation, two headers on a line).
				return true
			case ok && !plainConfig(cfg):
				// Found, but in a config git may read otherwise: the
				// value that counts may be another.
				return true
			}
		}
	}
	return false
}

// names reports whether the path v, as git reads it from a config in the
// directory base (workspace-relative), is the workspace directory rel. It
// is opened as openPath opens, not compared as text: git follows symlinks
// in it (../link/.. is not the directory holding .git when link leads
// elsewhere), so a path that crosses one, leaves the project or does not
// exist names some other directory.
func (rf *Finder) names(base, v, rel string) bool {
	f, got, why := rf.openPath(base, v)
	if why != "" {
		return false
	}
	f.Close()
	return got == path.Clean(rel)
}

// configValue is the last value a git config gives section.key (names are
// case-insensitive; quotes and comments dropped), and whether it is set.
// Only a header naming the section alone opens it: [core "x"] and
// [core.x] are subsections, whose keys git never reads as core's (an
// attack hid a core.worktree behind [core "x"] worktree = ..).
func configValue(cfg []byte, section, key string) (val string, set bool) {
	current := ""
	// git skips a UTF-8 byte-order mark before the first line, and trims
	// only spaces, tabs and line ends (not \f, \v or a no-break space).
	for _, line := range strings.Split(strings.TrimPrefix(string(cfg), "\xef\xbb\xbf"), "\n") {
		line = strings.Trim(line, " \t\r")
		if strings.HasPrefix(line, "[") {
			end := strings.IndexByte(line, ']')
			if end < 0 {
				continue
			}
			// The whole header, subsection and all: "core" only for [core].
			current = strings.ToLower(strings.Trim(line[1:end], " \t"))
			line = strings.Trim(line[end+1:], " \t")
		}
		k, v, _ := strings.Cut(line, "=")
		if current == section && strings.EqualFold(strings.TrimSpace(k), key) {
			val, set = configString(v), true
		}
	}
	return val, set
}

// worktreeKey finds "worktree" as a word of its own anywhere in a config
// (not worktreeConfig): where git may read a core.worktree.
// Compiled on first use: the package is linked into every command, and
// only a sweep reading a git checkout needs it.
var worktreeKey = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)(^|[^a-z0-9-])worktree($|[^a-z0-9-])`) })

// plainConfig reports whether a config is one that configValue reads as
// git does: no line continuations, no carriage returns, and no line with
// a second section header after its first.
func plainConfig(cfg []byte) bool {
	if bytes.ContainsAny(cfg, "\r") || bytes.Contains(cfg, []byte("\\\n")) {
		return false
	}
	for _, line := range bytes.Split(cfg, []byte("\n")) {
		if bytes.Count(line, []byte("[")) > 1 {
			return false
		}
	}
	return true
}

// configString is a config value as git reads it: a comment (# or ;)
// ends it only outside double quotes, the quotes themselves are dropped,
// a backslash escapes the next character (\n, \t, \b named), and blanks
// outside quotes at either end go. A value with an escape xfsq does not
// know, or an open quote, reads as itself with a NUL: it then names no
// directory, and a core.worktree that names none protects everything.
func configString(v string) string {
	var b strings.Builder
	quoted, pending := false, 0 // pending: blanks outside quotes, kept if more follows
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '"':
			quoted = !quoted
			continue
		case !quoted && (c == '#' || c == ';'):
			// Blanks inside quotes stay (git keeps them); only the
			// unquoted ones pending here are dropped, and leading unquoted
			// blanks never reached b.
			return b.String()
		case c == '\\':
			if i+1 >= len(v) {
				return v + "\x00"
			}
			i++
			switch v[i] {
			case 'n':
				c = '\n'
			case 't':
				c = '\t'
			case 'b':
				c = '\b'
			case '"', '\\':
				c = v[i]
			default:
				return v + "\x00"
			}
		case !quoted && (c == ' ' || c == '\t'):
			pending++
			continue
		}
		if pending > 0 && b.Len() > 0 {
			b.WriteString(strings.Repeat(" ", pending))
		}
		pending = 0
		b.WriteByte(c)
	}
	if quoted {
		return v + "\x00"
	}
	return b.String()
}

// objectFormatKey finds "objectformat" anywhere in a config: where git
// may read an extensions.objectformat.
var objectFormatKey = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)objectformat`) })

// configHashLen reads extensions.objectformat from a git config. One that
// names the key where configValue does not read it as git does (a line
// continuation, two headers on a line, a key outside [extensions]) is not
// read: the index would be parsed by a guess at its hash, and a guess can
// be made to parse cleanly (an attack's did, as SHA-1 where git reads
// SHA-256, naming other paths).
func configHashLen(cfg []byte) (int, error) {
	v, ok := configValue(cfg, "extensions", "objectformat")
	if objectFormatKey().Match(cfg) && (!ok || !plainConfig(cfg)) {
		return 0, errors.New("its config names an object format in a way git may read otherwise")
	}
	switch v = strings.ToLower(v); {
	case !ok || v == "sha1":
		return 20, nil
	case v == "sha256":
		return 32, nil
	}
	return 0, fmt.Errorf("its object format %q is not one xfsq reads", v)
}
