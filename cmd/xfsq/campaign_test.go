package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/internal/saferm"
	"github.com/xfsq/xfsq/internal/testsupport/gittest"
	"github.com/xfsq/xfsq/internal/testsupport/prereq"
	"github.com/xfsq/xfsq/inventory"
	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/sandbox"
	"github.com/xfsq/xfsq/store"
)

// The adversarial campaign: hostile trees (nested, submodule and worktree
// repositories, every index form git writes, symlinks at every depth, FIFOs
// and sockets where files are expected, bind and tmpfs mounts inside
// entries, future and ancient mtimes, hard-link farms) swept, purged and
// removed from while a racer swaps directories for symlinks with
// renameat2(RENAME_EXCHANGE). After each trial every protected path and a
// canary outside the root must be intact, every removal journalled, and the
// fallback ledger never below a fresh walk.
//
// XFSQ_TEST_CAMPAIGN_SEED replays a campaign; XFSQ_TEST_CAMPAIGN_SECONDS
// bounds it (default 40 s, at least one trial). Both reach the inside of the
// test kernel, where TestKernel runs one trial set on XFS.
const (
	envCampaignSeed    = "XFSQ_TEST_CAMPAIGN_SEED"
	envCampaignSeconds = "XFSQ_TEST_CAMPAIGN_SECONDS"
)

func TestAdversarialCampaign(t *testing.T) {
	if os.Geteuid() != 0 {
		prereq.Missing(t, "the campaign mounts inside tenant trees: run as root")
		return
	}
	runCampaign(t, func(t *testing.T) string { return t.TempDir() }, campaignBudget(40*time.Second))
}

func campaignBudget(def time.Duration) time.Duration {
	if s := os.Getenv(envCampaignSeconds); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			return time.Duration(n) * time.Second
		}
	}
	return def
}

// runCampaign runs trials on roots made by newRoot until budget is spent.
func runCampaign(t *testing.T, newRoot func(t *testing.T) string, budget time.Duration) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(envCampaignSeed); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("campaign seed %d (replay: %s=%d)", seed, envCampaignSeed, seed)
	templates := gitTemplates(t)
	deadline := time.Now().Add(budget)
	trials, violations := 0, 0
	for i := 0; i == 0 || time.Now().Before(deadline); i++ {
		trials++
		t.Run(fmt.Sprintf("trial%d", i), func(t *testing.T) {
			tr := newTrial(t, newRoot(t), templates, rand.New(rand.NewPCG(seed, uint64(i))))
			tr.run()
			violations += tr.check()
		})
	}
	t.Logf("campaign: %d trials, %d violations, seed %d", trials, violations, seed)
}

// gitTemplates makes one repository per index form git writes, once; each
// trial copies them.
func gitTemplates(t *testing.T) string {
	dir := t.TempDir()
	mk := func(name string, setup ...[]string) {
		repo := filepath.Join(dir, name)
		os.MkdirAll(filepath.Join(repo, "dist"), 0o755)
		os.WriteFile(filepath.Join(repo, "dist", "tracked.js"), []byte("tracked "+name), 0o644)
		os.WriteFile(filepath.Join(repo, "build.log"), []byte("tracked log "+name), 0o644)
		os.WriteFile(filepath.Join(repo, "src.go"), []byte("package x"), 0o644)
		gittest.Run(t, repo, "init", "-q")
		for _, s := range setup {
			gittest.Run(t, repo, s...)
		}
		gittest.Run(t, repo, "add", "-A")
		gittest.Run(t, repo, "commit", "-qm", "x")
	}
	mk("plain")
	mk("split", []string{"config", "core.splitIndex", "true"})
	mk("v4", []string{"config", "index.version", "4"})
	mk("skip", []string{"config", "index.version", "3"})
	gittest.Run(t, filepath.Join(dir, "skip"), "update-index", "--skip-worktree", "build.log")
	return dir
}

type trial struct {
	t       *testing.T
	s       *testRoot
	rng     *rand.Rand
	root    string
	outside string // the canary: must never change
	// protected maps paths (absolute) to a digest of what they must still
	// hold after the trial ("dir" for a directory that must exist).
	protected map[string]string
	// racy are pairs the racer exchanges: a real directory and a symlink
	// beside it pointing somewhere a deletion must never reach.
	racy    [][2]string
	swapped atomic.Int64
	xfs     bool // the kernel enforces; there is no ledger to check
}

var projects = []string{"alpha", "beta", "gamma"}

const ancient = 400 * 24 * time.Hour

func newTrial(t *testing.T, root string, templates string, rng *rand.Rand) *trial {
	tr := &trial{t: t, rng: rng, root: root, protected: map[string]string{}}
	tr.outside = t.TempDir()
	tr.s = newSandbox(t, root, "")
	var init sandbox.InitResult
	tr.s.json(&init, "init")
	tr.xfs = init.Backend.Kind == "xfs"
	for _, p := range append(projects, "doomed") {
		tr.s.ok("project", "add", p)
	}
	// The canary outside the root, with a file the tenant's trees reach
	// by symlink, hard link is impossible across filesystems, and bind mount.
	tr.write(filepath.Join(tr.outside, "canary.txt"), "outside the sandbox", false)
	tr.write(filepath.Join(tr.outside, "sub", "deep.log"), "outside, looks like trash", true)
	for _, p := range projects {
		tr.hostileWorkspace(p, templates)
		tr.hostileCache(p)
		tr.write(filepath.Join(root, "scratch", p, "run-old", "out.bin"), "old scratch", true)
	}
	// A project to purge whose trees hold a mount of the canary.
	tr.bind(tr.outside, filepath.Join(root, "projects", "doomed", "mnt"))
	tr.bind(tr.outside, filepath.Join(root, "cache", "doomed", "entry", "mnt"))
	// The trees were written behind xfsq's back: a walk makes them the
	// fallback's baseline, so that from here on only xfsq's own deletions
	// move the ledger, and they must never take it below a fresh walk.
	tr.s.ok("snapshot", "--all")
	tr.snapshotProtected()
	return tr
}

// write makes a file (and its parents); old ones get an ancient mtime so
// that every policy sees them as trash.
func (tr *trial) write(path, content string, old bool) {
	tr.t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		tr.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		tr.t.Fatal(err)
	}
	if old {
		tr.age(path, ancient)
	}
}

func (tr *trial) age(path string, by time.Duration) {
	when := time.Now().Add(-by)
	unix.UtimesNanoAt(unix.AT_FDCWD, path, []unix.Timespec{unix.NsecToTimespec(when.UnixNano()), unix.NsecToTimespec(when.UnixNano())}, unix.AT_SYMLINK_NOFOLLOW)
}

func (tr *trial) hostileWorkspace(p, templates string) {
	ws := filepath.Join(tr.root, "projects", p)
	tr.write(filepath.Join(ws, "uploads", "keep.txt"), "upload of "+p, true)
	tr.write(filepath.Join(ws, "inbox", "mail.log"), "inbox of "+p, true)
	// Plain trash, which a sweep should delete: old *.log, *.tmp, dist/.
	tr.write(filepath.Join(ws, "old.log"), "trash", true)
	tr.write(filepath.Join(ws, "x.tmp"), "trash", true)
	tr.write(filepath.Join(ws, "dist", "bundle.js"), "trash", true)
	tr.write(filepath.Join(ws, "coverage", "lcov.info"), "trash", true)
	// Fresh trash: busy_grace protects it.
	tr.write(filepath.Join(ws, "fresh.log"), "fresh", false)
	// Repositories: nested, one whose root is dist/, one of every index form.
	variants := []string{"plain", "split", "v4", "skip"}
	for i, v := range variants {
		dst := filepath.Join(ws, "src", fmt.Sprint("repo", i))
		if i == 0 {
			dst = filepath.Join(ws, "lib", "dist") // a repository called dist/
		}
		copyTree(tr.t, filepath.Join(templates, v), dst)
		tr.ageTree(dst)
	}
	// A worktree: .git is a file pointing into the main repository.
	main := filepath.Join(ws, "src", "repo1")
	gittest.Run(tr.t, main, "worktree", "add", "-q", "../linked")
	tr.ageTree(filepath.Join(ws, "src", "linked"))
	// A FIFO where an index should be: the sweep must neither hang nor treat
	// that repository as untracked.
	if p == "gamma" {
		fifoRepo := filepath.Join(ws, "fifo-repo")
		copyTree(tr.t, filepath.Join(templates, "plain"), fifoRepo)
		os.Remove(filepath.Join(fifoRepo, ".git", "index"))
		if err := unix.Mkfifo(filepath.Join(fifoRepo, ".git", "index"), 0o644); err != nil {
			tr.t.Fatal(err)
		}
		tr.ageTree(fifoRepo)
	}
	// Links: a symlink in trash to the canary and to the uploads, a hard-link
	// farm of an upload inside trash, a symlink at the top of dist/.
	os.Symlink(filepath.Join(tr.outside, "canary.txt"), filepath.Join(ws, "dist", "to-canary.log"))
	os.Symlink("../uploads/keep.txt", filepath.Join(ws, "dist", "to-upload"))
	for i := range 3 {
		os.Link(filepath.Join(ws, "uploads", "keep.txt"), filepath.Join(ws, "coverage", fmt.Sprint("hl", i, ".log")))
	}
	// A socket where trash is expected.
	if l, err := net.Listen("unix", filepath.Join(ws, "dist", "s.sock")); err == nil {
		l.Close()
	}
	// A bind mount of the canary and a tmpfs inside trash.
	tr.bind(tr.outside, filepath.Join(ws, "coverage", "mnt"))
	tr.tmpfs(filepath.Join(ws, "dist", "tmpfs"))
	tr.ageTree(filepath.Join(ws, "dist"))
	tr.ageTree(filepath.Join(ws, "coverage"))
	// What the racer swaps: trash directories for symlinks to another
	// project's uploads and to the canary.
	other := projects[(indexOf(projects, p)+1)%len(projects)]
	tr.decoy(filepath.Join(ws, "dist"), filepath.Join(tr.root, "projects", other, "uploads"))
	tr.decoy(filepath.Join(ws, "coverage"), tr.outside)
}

func (tr *trial) hostileCache(p string) {
	c := filepath.Join(tr.root, "cache", p)
	tr.write(filepath.Join(c, "old-mod", "pkg", "a.go"), "old cache", true)
	tr.ageTree(filepath.Join(c, "old-mod"))
	tr.write(filepath.Join(c, "fresh-mod", "b.go"), "fresh cache", false)
	// A future mtime must not pin an entry forever, but must not make a
	// fresh entry deletable either; either way nothing outside is reached.
	tr.write(filepath.Join(c, "future", "c.go"), "future cache", false)
	tr.age(filepath.Join(c, "future", "c.go"), -100*24*time.Hour)
	tr.bind(tr.outside, filepath.Join(c, "mounted", "mnt"))
	tr.ageTree(filepath.Join(c, "mounted"))
	tr.decoy(filepath.Join(c, "old-mod"), tr.outside)
}

// decoy sets up a symlink beside dir that points at target; the racer
// exchanges the two, so that dir is now a directory, now a link.
func (tr *trial) decoy(dir, target string) {
	link := filepath.Join(filepath.Dir(dir), ".decoy-"+filepath.Base(dir))
	if err := os.Symlink(target, link); err != nil {
		tr.t.Fatal(err)
	}
	tr.racy = append(tr.racy, [2]string{dir, link})
}

func (tr *trial) ageTree(dir string) {
	var paths []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil {
			paths = append(paths, p)
		}
		if err == nil && d.IsDir() && p != dir && isMountPoint(p) {
			return filepath.SkipDir
		}
		return nil
	})
	// Children first, so a directory's own mtime is set last.
	for i := len(paths) - 1; i >= 0; i-- {
		if !isMountPoint(paths[i]) {
			tr.age(paths[i], ancient)
		}
	}
}

// isMountPoint asks the kernel: a bind mount from the same filesystem keeps
// st_dev, so only the mount-root attribute tells.
func isMountPoint(p string) bool {
	var st unix.Statx_t
	if unix.Statx(unix.AT_FDCWD, p, unix.AT_SYMLINK_NOFOLLOW|unix.AT_NO_AUTOMOUNT, unix.STATX_BASIC_STATS, &st) != nil {
		return false
	}
	return st.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT != 0 && st.Attributes&unix.STATX_ATTR_MOUNT_ROOT != 0
}

func (tr *trial) bind(from, at string) {
	tr.t.Helper()
	os.MkdirAll(at, 0o755)
	if err := unix.Mount(from, at, "", unix.MS_BIND, ""); err != nil {
		tr.t.Fatalf("bind mount %s on %s: %v", from, at, err)
	}
	tr.t.Cleanup(func() { unix.Unmount(at, unix.MNT_DETACH) })
	tr.protected[at+"/"] = "mount"
}

func (tr *trial) tmpfs(at string) {
	tr.t.Helper()
	os.MkdirAll(at, 0o755)
	if err := unix.Mount("tmpfs", at, "tmpfs", 0, "size=1m"); err != nil {
		tr.t.Fatalf("tmpfs on %s: %v", at, err)
	}
	tr.t.Cleanup(func() { unix.Unmount(at, unix.MNT_DETACH) })
	tr.write(filepath.Join(at, "in-tmpfs.log"), "on another mount", true)
	tr.protected[at+"/"] = "mount"
}

// snapshotProtected records what must survive: everything outside the
// root, uploads and inboxes, every repository's .git and tracked files,
// fresh files, and whatever lies beyond a mount point.
func (tr *trial) snapshotProtected() {
	record := func(p string) {
		if d := digest(p); d != "" {
			tr.protected[p] = d
		}
	}
	filepath.WalkDir(tr.outside, func(p string, d fs.DirEntry, err error) error {
		if err == nil {
			record(p)
		}
		return nil
	})
	for _, p := range projects {
		ws := filepath.Join(tr.root, "projects", p)
		for _, rel := range []string{"uploads/keep.txt", "inbox/mail.log", "fresh.log"} {
			record(filepath.Join(ws, rel))
		}
		record(filepath.Join(tr.root, "cache", p, "fresh-mod", "b.go"))
		record(filepath.Join(tr.root, "cache", p, "future", "c.go"))
		filepath.WalkDir(ws, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if d.Name() == ".git" {
				repo := filepath.Dir(path)
				record(path)
				for _, rel := range []string{"dist/tracked.js", "build.log", "src.go"} {
					record(filepath.Join(repo, rel))
				}
				if d.IsDir() {
					record(filepath.Join(path, "HEAD"))
					record(filepath.Join(path, "config"))
					return filepath.SkipDir
				}
			}
			if d.IsDir() && path != ws && isMountPoint(path) {
				return filepath.SkipDir
			}
			return nil
		})
	}
	var mounts []string
	for p, what := range tr.protected {
		if what == "mount" {
			mounts = append(mounts, strings.TrimSuffix(p, "/"))
		}
	}
	for _, m := range mounts {
		filepath.WalkDir(m, func(q string, d fs.DirEntry, err error) error {
			if err == nil && q != m {
				record(q)
			}
			return nil
		})
	}
}

// digest is what a path holds, without following a final symlink.
func digest(p string) string {
	fi, err := os.Lstat(p)
	if err != nil {
		return ""
	}
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		target, _ := os.Readlink(p)
		return "link:" + target
	case fi.IsDir():
		return "dir"
	case fi.Mode().IsRegular():
		b, _ := os.ReadFile(p)
		return fmt.Sprintf("file:%x", sha256.Sum256(b))
	default:
		return "special:" + fi.Mode().Type().String()
	}
}

// run sweeps every project, removes files and purges a project, all at
// once, while the racer swaps.
func (tr *trial) run() {
	ctx, stop := context.WithCancel(context.Background())
	var racer sync.WaitGroup
	racer.Add(1)
	go func() { defer racer.Done(); tr.race(ctx) }()
	var ops sync.WaitGroup
	do := func(args ...string) {
		ops.Add(1)
		go func() {
			defer ops.Done()
			r := tr.s.run(args...)
			if r.signaled {
				tr.t.Errorf("xfsq %v died: %s", args, r.stderr)
			}
		}()
	}
	do("sweep", "--all")
	do("sweep", "alpha", "--area", "cache")
	for range 3 {
		do("files", "rm", "beta", "old.log")
	}
	do("files", "rm", "alpha", "coverage", "--recursive")
	do("project", "rm", "doomed", "--purge")
	done := make(chan struct{})
	go func() { ops.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		tr.t.Error("the operations did not finish within 2 minutes (a FIFO or a race hung them)")
	}
	stop()
	racer.Wait()
	// Put every decoy back where it started, so the checks see the layout
	// they recorded: the directory under its own name (a removal may have
	// taken the symlink that stood there, or the directory itself).
	for _, pair := range tr.racy {
		dir, link := pair[0], pair[1]
		if fi, err := os.Lstat(link); err == nil && fi.IsDir() {
			if _, err := os.Lstat(dir); err == nil {
				unix.Renameat2(unix.AT_FDCWD, dir, unix.AT_FDCWD, link, unix.RENAME_EXCHANGE)
			} else {
				os.Rename(link, dir)
			}
		}
	}
}

func (tr *trial) race(ctx context.Context) {
	for ctx.Err() == nil {
		pair := tr.racy[tr.rng.IntN(len(tr.racy))]
		if unix.Renameat2(unix.AT_FDCWD, pair[0], unix.AT_FDCWD, pair[1], unix.RENAME_EXCHANGE) == nil {
			tr.swapped.Add(1)
		}
		time.Sleep(time.Duration(tr.rng.IntN(300)) * time.Microsecond)
	}
}

// check counts and reports the trial's violations.
func (tr *trial) check() int {
	n := 0
	bad := func(format string, args ...any) {
		n++
		tr.t.Errorf("VIOLATION: "+format, args...)
	}
	paths := make([]string, 0, len(tr.protected))
	for p := range tr.protected {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		want := tr.protected[p]
		if want == "mount" {
			if !isMountPoint(strings.TrimSuffix(p, "/")) {
				bad("mount point %s is gone", p)
			}
			continue
		}
		if got := digest(p); got != want {
			bad("protected %s changed: %q, was %q", p, got, want)
		}
	}
	// Every deletion journalled: pending before, settled after.
	st := tr.s.store()
	evs, err := st.Events(context.Background(), store.EventFilter{Type: journal.TypeEvicted, Limit: 100000})
	if err != nil {
		tr.t.Fatal(err)
	}
	states := map[string][]string{}
	raw := map[string][]string{}
	for _, e := range evs {
		var rec struct{ Path, State string }
		json.Unmarshal(e.Payload, &rec)
		states[rec.Path] = append(states[rec.Path], rec.State)
		raw[rec.Path] = append(raw[rec.Path], e.Actor+" "+string(e.Payload))
	}
	for path, ss := range states {
		pending, settled := 0, 0
		for _, s := range ss {
			if s == "pending" {
				pending++
			} else {
				settled++
			}
		}
		if pending != settled {
			bad("deletion of %s: %d pending records, %d settled:\n%s", path, pending, settled, strings.Join(raw[path], "\n"))
		}
	}
	for _, rel := range []string{"projects/alpha/old.log", "projects/beta/x.tmp", "cache/beta/old-mod"} {
		if _, err := os.Lstat(filepath.Join(tr.root, rel)); os.IsNotExist(err) && len(states[rel]) == 0 {
			bad("%s is gone without a storage.evicted record", rel)
		}
	}
	// The ledger never below a fresh walk of what the root's filesystem
	// holds in the tree (the fallback's promise): beneath the tmpfs, and
	// without the canary bind-mounted into it, which is not the tenant's.
	for _, p := range projects {
		if tr.xfs {
			break
		}
		for _, area := range []string{"workspace", "cache"} {
			_, used, _, err := st.Account(context.Background(), store.TreeKey{Project: p, Area: area})
			if err != nil {
				tr.t.Fatal(err)
			}
			base := map[string]string{"workspace": "projects", "cache": "cache"}[area]
			walked := onDisk(tr.t, tr.root, filepath.Join(base, p))
			if used.Bytes < walked.Bytes || used.Inodes < walked.Inodes {
				bad("%s/%s: ledger %d bytes %d inodes below a fresh walk %d bytes %d inodes", p, area, used.Bytes, used.Inodes, walked.Bytes, walked.Inodes)
			}
		}
	}
	tr.t.Logf("trial: %d swaps, %d protected paths, %d paths journalled, %d violations", tr.swapped.Load(), len(paths), len(states), n)
	return n
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}

// copyTree copies a directory tree (regular files, dirs, symlinks).
func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(dst, 0o755)
		case d.Type()&os.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, dst)
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(dst, b, 0o644)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
}

// onDisk measures the tree at rel below root as the root's filesystem holds
// it: through a copy of the root's mount without the mounts below it.
func onDisk(t *testing.T, root, rel string) inventory.Usage {
	t.Helper()
	b, err := saferm.Beneath(root)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	d, err := b.OpenDir(rel)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	f, err := d.File()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	u, err := inventory.MeasureFile(f)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
