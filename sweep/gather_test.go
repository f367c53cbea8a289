package sweep

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/xfsq/xfsq/internal/deletion"
	"github.com/xfsq/xfsq/internal/saferm"
	"github.com/xfsq/xfsq/internal/testsupport/gittest"
	"github.com/xfsq/xfsq/internal/testsupport/treetest"
)

// ageTree makes everything under dir (links excepted) 30 days old: past
// busy_grace and workspace_trash_age, so only protection keeps a path.
func ageTree(t *testing.T, dir string) {
	t.Helper()
	old := time.Now().Add(-30 * 24 * time.Hour)
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type()&(fs.ModeSymlink|fs.ModeNamedPipe) == 0 {
			os.Chtimes(p, old, old)
		}
		return nil
	})
}

// gitRepoAt makes a repository at dir tracking tracked (committed), with
// untracked files beside them.
func gitRepoAt(t *testing.T, dir string, tracked, untracked []string, init ...string) {
	t.Helper()
	os.MkdirAll(dir, 0o755)
	gittest.Run(t, dir, append([]string{"init", "-q"}, init...)...)
	gittest.WriteFiles(t, dir, tracked...)
	gittest.WriteFiles(t, dir, untracked...)
	gittest.Run(t, dir, append([]string{"add", "--"}, tracked...)...)
	gittest.Run(t, dir, "commit", "-q", "-m", "fixture")
}

// A real sweep (walk, plan, execute) of workspaces holding repositories in
// every form an agent can make: what git tracks and every .git survive,
// untracked old trash is still deleted (the protection is not "delete
// nothing"), and a repository that cannot be read is left whole with its
// reason in the plan.
func TestSweepProtectsEveryRepository(t *testing.T) {
	cases := []struct {
		name    string
		setup   func(t *testing.T, ws string)
		survive []string          // relative to the workspace
		planned []string          // must not be planned, nor anything holding it
		gone    []string          // untracked old trash
		skipped map[string]string // workspace-relative path ("." the tree) -> reason fragment
	}{
		{
			name: "nested repository in a subdirectory with tracked dist/ and *.log",
			setup: func(t *testing.T, ws string) {
				gitRepoAt(t, filepath.Join(ws, "src/lib"), []string{"dist/app.js", "build.log", "main.go"}, []string{"dist/stale.js", "stale.log"})
				gittest.WriteFiles(t, ws, "top.log", "dist/out.js")
			},
			survive: []string{"src/lib/.git/HEAD", "src/lib/.git/index", "src/lib/dist/app.js", "src/lib/build.log", "src/lib/main.go"},
			gone:    []string{"src/lib/dist/stale.js", "src/lib/stale.log", "top.log", "dist"},
		},
		{
			name: "repository whose root is named dist/",
			setup: func(t *testing.T, ws string) {
				gitRepoAt(t, filepath.Join(ws, "dist"), []string{"index.js", "lib/util.js"}, []string{"notes.txt", "old.log", "coverage/lcov.info"})
			},
			survive: []string{"dist/.git/HEAD", "dist/index.js", "dist/lib/util.js", "dist/notes.txt"},
			gone:    []string{"dist/old.log", "dist/coverage"},
		},
		{
			// git --git-dir=meta/.git reads its index against work/: the
			// tracked files are nowhere near the .git.
			name: "repository whose config sets core.worktree elsewhere",
			setup: func(t *testing.T, ws string) {
				gitRepoAt(t, filepath.Join(ws, "meta"), []string{"readme"}, nil)
				gittest.WriteFiles(t, ws, "work/dist/x.js", "work/build.log")
				gittest.Run(t, filepath.Join(ws, "meta"), "config", "core.worktree", "../../work")
				gittest.Run(t, filepath.Join(ws, "meta"), "add", "-A")
				gittest.Run(t, filepath.Join(ws, "meta"), "commit", "-q", "-m", "work")
				gittest.WriteFiles(t, ws, "top.log")
			},
			survive: []string{"work/dist/x.js", "work/build.log", "meta/.git/HEAD", "top.log"},
			skipped: map[string]string{".": "core.worktree"},
		},
		{
			name: "repository deep below a trash directory",
			setup: func(t *testing.T, ws string) {
				gitRepoAt(t, filepath.Join(ws, "coverage/tools/repo"), []string{"x.txt"}, []string{"notes.txt"})
				gittest.WriteFiles(t, ws, "coverage/junk.txt", "coverage/tools/other/y.txt")
			},
			survive: []string{"coverage/tools/repo/.git/HEAD", "coverage/tools/repo/x.txt", "coverage/tools/repo/notes.txt"},
			gone:    []string{"coverage/junk.txt", "coverage/tools/other"},
		},
		{
			name: "submodule (gitlink) inside dist/",
			setup: func(t *testing.T, ws string) {
				src := t.TempDir()
				gitRepoAt(t, src, []string{"lib.js"}, nil)
				gitRepoAt(t, ws, []string{"main.go"}, nil)
				gittest.Run(t, ws, "submodule", "add", "-q", src, "dist/lib")
				gittest.Run(t, ws, "commit", "-q", "-m", "submodule")
				gittest.WriteFiles(t, ws, "dist/stale.js", "dist/lib/old.log")
			},
			survive: []string{"main.go", ".gitmodules", "dist/lib/.git", "dist/lib/lib.js", ".git/modules/dist/lib/HEAD"},
			gone:    []string{"dist/stale.js", "dist/lib/old.log"},
		},
		{
			name: "submodule whose repository is gone",
			setup: func(t *testing.T, ws string) {
				src := t.TempDir()
				gitRepoAt(t, src, []string{"lib.js"}, nil)
				gitRepoAt(t, ws, []string{"main.go"}, nil)
				gittest.Run(t, ws, "submodule", "add", "-q", src, "dist/lib")
				gittest.Run(t, ws, "commit", "-q", "-m", "submodule")
				os.Remove(filepath.Join(ws, "dist/lib/.git"))
				gittest.WriteFiles(t, ws, "dist/stale.js", "dist/lib/old.log")
			},
			survive: []string{"dist/lib/lib.js", "dist/lib/old.log"},
			gone:    []string{"dist/stale.js"},
			skipped: map[string]string{"dist/lib": "submodule"},
		},
		{
			name: "worktree (.git is a file) of a repository in the project",
			setup: func(t *testing.T, ws string) {
				gitRepoAt(t, filepath.Join(ws, "main"), []string{"dist/app.js"}, nil)
				gittest.Run(t, filepath.Join(ws, "main"), "worktree", "add", "-q", filepath.Join(ws, "wt"))
				gittest.WriteFiles(t, ws, "wt/dist/stale.js")
			},
			survive: []string{"wt/.git", "wt/dist/app.js", "main/dist/app.js", "main/.git/worktrees/wt/HEAD"},
			gone:    []string{"wt/dist/stale.js"},
		},
		{
			name: "worktree of a repository outside the project",
			setup: func(t *testing.T, ws string) {
				outside := t.TempDir()
				gitRepoAt(t, outside, []string{"dist/app.js"}, nil)
				gittest.Run(t, outside, "worktree", "add", "-q", filepath.Join(ws, "wt"))
				gittest.WriteFiles(t, ws, "wt/dist/stale.js", "top.log")
			},
			// Its git directory's config, outside, may set core.worktree
			// anywhere: nothing of the workspace goes.
			survive: []string{"wt/.git", "wt/dist/app.js", "wt/dist/stale.js", "top.log"},
			skipped: map[string]string{".": "outside the project"},
		},
		{
			name: "split index (update-index --split-index)",
			setup: func(t *testing.T, ws string) {
				repo := filepath.Join(ws, "sub/repo")
				gitRepoAt(t, repo, []string{"dist/app.js", "x.log", "dist/removed.js"}, []string{"dist/stale.js"})
				gittest.Run(t, repo, "update-index", "--split-index")
				gittest.WriteFiles(t, repo, "dist/new.js")
				gittest.Run(t, repo, "add", "dist/new.js")
				gittest.Run(t, repo, "rm", "-q", "--cached", "dist/removed.js")
			},
			survive: []string{"sub/repo/dist/app.js", "sub/repo/x.log", "sub/repo/dist/new.js"},
			gone:    []string{"sub/repo/dist/stale.js", "sub/repo/dist/removed.js"},
		},
		{
			name: "split index (core.splitIndex=true)",
			setup: func(t *testing.T, ws string) {
				repo := filepath.Join(ws, "sub/repo")
				os.MkdirAll(repo, 0o755)
				gittest.Run(t, repo, "init", "-q")
				gittest.Run(t, repo, "config", "core.splitIndex", "true")
				gittest.WriteFiles(t, repo, "dist/app.js", "x.log", "dist/stale.js")
				gittest.Run(t, repo, "add", "dist/app.js", "x.log")
			},
			survive: []string{"sub/repo/dist/app.js", "sub/repo/x.log"},
			gone:    []string{"sub/repo/dist/stale.js"},
		},
		{
			name: "index version 4",
			setup: func(t *testing.T, ws string) {
				repo := filepath.Join(ws, "sub/repo")
				gitRepoAt(t, repo, []string{"dist/app.js", "dist/deeper/b.js", "a.log"}, []string{"dist/stale.js"})
				gittest.Run(t, repo, "update-index", "--index-version", "4")
			},
			survive: []string{"sub/repo/dist/app.js", "sub/repo/dist/deeper/b.js", "sub/repo/a.log"},
			gone:    []string{"sub/repo/dist/stale.js"},
		},
		{
			name: "index version 3: skip-worktree and intent-to-add",
			setup: func(t *testing.T, ws string) {
				repo := filepath.Join(ws, "sub/repo")
				gitRepoAt(t, repo, []string{"dist/app.js", "dist/skipped.js"}, []string{"dist/stale.js", "dist/later.js"})
				gittest.Run(t, repo, "update-index", "--skip-worktree", "dist/skipped.js")
				gittest.Run(t, repo, "add", "-N", "dist/later.js")
			},
			survive: []string{"sub/repo/dist/app.js", "sub/repo/dist/skipped.js", "sub/repo/dist/later.js"},
			gone:    []string{"sub/repo/dist/stale.js"},
		},
		{
			name: "sparse index: a sparse directory is tracked whole",
			setup: func(t *testing.T, ws string) {
				gitRepoAt(t, ws, []string{"a/main.go", "dist/app.js"}, []string{"a/old.log"})
				gittest.Run(t, ws, "sparse-checkout", "init", "--cone", "--sparse-index")
				gittest.Run(t, ws, "sparse-checkout", "set", "a")
				gittest.WriteFiles(t, ws, "dist/app.js", "dist/extra.js") // the agent makes it again
			},
			survive: []string{"dist/app.js", "dist/extra.js", "a/main.go"},
			gone:    []string{"a/old.log"},
			skipped: map[string]string{"dist": "sparse directory"},
		},
		{
			name: "SHA-256 repository",
			setup: func(t *testing.T, ws string) {
				gitRepoAt(t, filepath.Join(ws, "sub/repo"), []string{"dist/app.js"}, []string{"dist/stale.js"}, "--object-format=sha256")
			},
			survive: []string{"sub/repo/dist/app.js"},
			gone:    []string{"sub/repo/dist/stale.js"},
		},
		{
			name: "garbage index: the repository is left whole",
			setup: func(t *testing.T, ws string) {
				gitRepoAt(t, filepath.Join(ws, "sub/repo"), []string{"dist/app.js"}, []string{"dist/stale.js"})
				os.WriteFile(filepath.Join(ws, "sub/repo/.git/index"), []byte("DIRC garbage, not an index at all"), 0o644)
				gittest.WriteFiles(t, ws, "top.log")
			},
			survive: []string{"sub/repo/dist/app.js", "sub/repo/dist/stale.js"},
			gone:    []string{"top.log"},
			skipped: map[string]string{"sub/repo": "cannot be read"},
		},
		{
			name: "a directory where the index should be",
			setup: func(t *testing.T, ws string) {
				gitRepoAt(t, filepath.Join(ws, "sub/repo"), []string{"dist/app.js"}, []string{"dist/stale.js"})
				os.Remove(filepath.Join(ws, "sub/repo/.git/index"))
				os.Mkdir(filepath.Join(ws, "sub/repo/.git/index"), 0o755)
			},
			survive: []string{"sub/repo/dist/app.js", "sub/repo/dist/stale.js"},
			skipped: map[string]string{"sub/repo": "a directory"},
		},
		{
			// It hung every sweep: the workspace's own index, opened blocking.
			name: "FIFO at .git/index: no hang, left whole",
			setup: func(t *testing.T, ws string) {
				gitRepoAt(t, ws, []string{"dist/app.js"}, []string{"dist/stale.js"})
				os.Remove(filepath.Join(ws, ".git/index"))
				if err := syscall.Mkfifo(filepath.Join(ws, ".git/index"), 0o644); err != nil {
					t.Fatal(err)
				}
			},
			survive: []string{"dist/app.js", "dist/stale.js"},
			skipped: map[string]string{".": "named pipe"},
		},
		{
			// Read whole it cost 2 GB of memory: it must not be read at all.
			name: "a 1.1 GiB (sparse) index: refused unread, left whole",
			setup: func(t *testing.T, ws string) {
				gitRepoAt(t, filepath.Join(ws, "sub/repo"), []string{"dist/app.js"}, []string{"dist/stale.js"})
				if err := os.Truncate(filepath.Join(ws, "sub/repo/.git/index"), 1100<<20); err != nil {
					t.Fatal(err)
				}
			},
			survive: []string{"sub/repo/dist/app.js", "sub/repo/dist/stale.js"},
			skipped: map[string]string{"sub/repo": "more than"},
		},
		{
			name: "symlinked .git: not followed, left whole",
			setup: func(t *testing.T, ws string) {
				real := t.TempDir()
				gitRepoAt(t, real, []string{"dist/app.js"}, nil)
				os.MkdirAll(filepath.Join(ws, "sub/repo"), 0o755)
				os.Symlink(filepath.Join(real, ".git"), filepath.Join(ws, "sub/repo/.git"))
				gittest.WriteFiles(t, ws, "sub/repo/dist/app.js", "sub/repo/dist/stale.js")
			},
			survive: []string{"sub/repo/.git", "sub/repo/dist/app.js", "sub/repo/dist/stale.js"},
			skipped: map[string]string{".": "symlink"},
		},
		{
			name: "dangling .git file",
			setup: func(t *testing.T, ws string) {
				gittest.WriteFiles(t, ws, "sub/repo/dist/app.js")
				os.WriteFile(filepath.Join(ws, "sub/repo/.git"), []byte("gitdir: ../nowhere/.git\n"), 0o644)
			},
			survive: []string{"sub/repo/.git", "sub/repo/dist/app.js"},
			skipped: map[string]string{"sub/repo": "does not exist"},
		},
		{
			name: ".git file whose gitdir is reached through a symlink",
			setup: func(t *testing.T, ws string) {
				gitRepoAt(t, filepath.Join(ws, "main"), []string{"x.txt"}, nil)
				os.Symlink("main", filepath.Join(ws, "alias"))
				gittest.WriteFiles(t, ws, "sub/repo/dist/app.js")
				os.WriteFile(filepath.Join(ws, "sub/repo/.git"), []byte("gitdir: ../../alias/.git\n"), 0o644)
			},
			survive: []string{"sub/repo/dist/app.js", "main/x.txt"},
			skipped: map[string]string{".": "without symlinks"},
		},
		{
			// git init --separate-git-dir: the git directory has no entry
			// named .git, and a trash directory holding it looked clean.
			name: "a .git file's git directory inside a trash directory",
			setup: func(t *testing.T, ws string) {
				os.MkdirAll(filepath.Join(ws, "b/dist"), 0o755)
				gitRepoAt(t, filepath.Join(ws, "b/proj"), []string{"important.txt"}, nil, "--separate-git-dir="+filepath.Join(ws, "b/dist/proj.git"))
				gittest.WriteFiles(t, ws, "b/dist/stale.js")
			},
			survive: []string{"b/dist/proj.git/HEAD", "b/dist/proj.git/index", "b/proj/important.txt"},
		},
		{
			// A linked worktree's commondir names the repository's objects.
			name: "a worktree whose common directory is inside a trash directory",
			setup: func(t *testing.T, ws string) {
				os.MkdirAll(filepath.Join(ws, "dist"), 0o755)
				gitRepoAt(t, filepath.Join(ws, "main"), []string{"x.txt"}, nil, "--separate-git-dir="+filepath.Join(ws, "dist/main.git"))
				gittest.Run(t, filepath.Join(ws, "main"), "worktree", "add", "-q", filepath.Join(ws, "wt"))
				os.Remove(filepath.Join(ws, "main/.git")) // only the worktree points at it now
			},
			survive: []string{"dist/main.git/HEAD", "dist/main.git/objects", "wt/x.txt"},
		},
		{
			name: "a .git file pointing at a directory that is no git directory",
			setup: func(t *testing.T, ws string) {
				gittest.WriteFiles(t, ws, "r/dist/app.js")
				os.WriteFile(filepath.Join(ws, "r/.git"), []byte("gitdir: dist\n"), 0o644)
			},
			survive: []string{"r/dist/app.js"},
			skipped: map[string]string{"r": "not a git directory"},
		},
		{
			// The text ../link/.. cleans to the directory holding .git;
			// git follows link and works in dist/.
			name: "core.worktree through a symlink",
			setup: func(t *testing.T, ws string) {
				os.MkdirAll(filepath.Join(ws, "b2/dist/x"), 0o755)
				gitRepoAt(t, filepath.Join(ws, "b2/R"), []string{"r.txt"}, nil)
				os.Symlink("../dist/x", filepath.Join(ws, "b2/R/link"))
				gittest.Run(t, filepath.Join(ws, "b2/R"), "config", "core.worktree", "../link/..")
				gittest.WriteFiles(t, ws, "b2/dist/precious.txt")
				gittest.Run(t, filepath.Join(ws, "b2/R"), "add", "precious.txt")
			},
			survive: []string{"b2/dist/precious.txt"},
			skipped: map[string]string{".": "core.worktree"},
		},
		{
			// git keeps the trailing space (it writes it so itself); cut,
			// the pointer led nowhere and dist/ went with the git directory.
			name: "a git directory whose name ends in a space, in a trash directory",
			setup: func(t *testing.T, ws string) {
				os.MkdirAll(filepath.Join(ws, "dist"), 0o755)
				gitRepoAt(t, filepath.Join(ws, "proj"), []string{"f"}, nil, "--separate-git-dir="+filepath.Join(ws, "dist/sep.git "))
			},
			survive: []string{"dist/sep.git /HEAD", "proj/f"},
		},
		{
			name: "a .git file spelled so that xfsq cannot follow it (// before its absolute path)",
			setup: func(t *testing.T, ws string) {
				os.MkdirAll(filepath.Join(ws, "dist"), 0o755)
				gitRepoAt(t, filepath.Join(ws, "proj"), []string{"f"}, nil, "--separate-git-dir="+filepath.Join(ws, "dist/sep.git"))
				os.WriteFile(filepath.Join(ws, "proj/.git"), []byte("gitdir: /"+filepath.Join(ws, "dist/sep.git")+"\n"), 0o644)
				gittest.WriteFiles(t, ws, "top.log")
			},
			survive: []string{"dist/sep.git/HEAD", "proj/f", "top.log"},
			skipped: map[string]string{".": "cannot be followed"},
		},
		{
			// git keeps a # inside quotes: the work tree is r#x, not r.
			name: "core.worktree quoted with a # in it",
			setup: func(t *testing.T, ws string) {
				gitRepoAt(t, filepath.Join(ws, "r"), []string{"r.txt"}, nil)
				f, _ := os.OpenFile(filepath.Join(ws, "r/.git/config"), os.O_APPEND|os.O_WRONLY, 0)
				f.WriteString("[core]\n\tworktree = \"../../r#x\"\n")
				f.Close()
				gittest.WriteFiles(t, ws, "r#x/dist/keep.js")
			},
			survive: []string{"r#x/dist/keep.js"},
			skipped: map[string]string{".": "core.worktree"},
		},
		{
			// Its text says "does not exist"; what it meets is a symlink.
			name: "an unfollowable .git file whose path reads 'does not exist'",
			setup: func(t *testing.T, ws string) {
				os.MkdirAll(filepath.Join(ws, "dist"), 0o755)
				gitRepoAt(t, filepath.Join(ws, "x"), []string{"f"}, nil, "--separate-git-dir="+filepath.Join(ws, "dist/sep.git"))
				os.Symlink(".", filepath.Join(ws, "x/lnk"))
				os.MkdirAll(filepath.Join(ws, "x/does not exist"), 0o755)
				os.WriteFile(filepath.Join(ws, "x/.git"), []byte("gitdir: lnk/does not exist/../../dist/sep.git\n"), 0o644)
			},
			planned: []string{"dist/sep.git"},
			skipped: map[string]string{".": "cannot be followed"},
		},
		{
			name: "a .git file through /proc/self/root",
			setup: func(t *testing.T, ws string) {
				os.MkdirAll(filepath.Join(ws, "dist"), 0o755)
				gitRepoAt(t, filepath.Join(ws, "x"), []string{"f"}, nil, "--separate-git-dir="+filepath.Join(ws, "dist/sep.git"))
				os.WriteFile(filepath.Join(ws, "x/.git"), []byte("gitdir: /proc/self/root"+filepath.Join(ws, "dist/sep.git")+"\n"), 0o644)
			},
			planned: []string{"dist/sep.git"},
			skipped: map[string]string{".": "cannot be followed"},
		},
		{
			// git reads up to the NUL; cleaned whole, the path led out.
			name: "a .git file with a NUL in it",
			setup: func(t *testing.T, ws string) {
				os.MkdirAll(filepath.Join(ws, "dist"), 0o755)
				gitRepoAt(t, filepath.Join(ws, "x"), []string{"f"}, nil, "--separate-git-dir="+filepath.Join(ws, "dist/sep.git"))
				os.WriteFile(filepath.Join(ws, "x/.git"), []byte("gitdir: "+filepath.Join(ws, "dist/sep.git")+"\x00/../../../../../../../../elsewhere\n"), 0o644)
			},
			planned: []string{"dist/sep.git"},
		},
		{
			name: "a config starting with a byte-order mark sets core.worktree",
			setup: func(t *testing.T, ws string) {
				gitRepoAt(t, filepath.Join(ws, "x"), []string{"f"}, nil)
				gittest.WriteFiles(t, ws, "w/app.log")
				os.WriteFile(filepath.Join(ws, "x/.git/config"), []byte("\xef\xbb\xbf[core]\n\trepositoryformatversion = 0\n\tworktree = ../../w\n"), 0o644)
			},
			survive: []string{"w/app.log"},
			skipped: map[string]string{".": "core.worktree"},
		},
		{
			// git trims spaces and tabs only: the work tree is x/\f.
			name: "core.worktree ending in a form feed",
			setup: func(t *testing.T, ws string) {
				gitRepoAt(t, filepath.Join(ws, "x"), []string{"f"}, nil)
				gittest.WriteFiles(t, ws, "x/\f/app.log")
				f, _ := os.OpenFile(filepath.Join(ws, "x/.git/config"), os.O_APPEND|os.O_WRONLY, 0)
				f.WriteString("[core]\n\tworktree = ../\f\n")
				f.Close()
			},
			survive: []string{"x/\f/app.log"},
			skipped: map[string]string{".": "core.worktree"},
		},
		{
			name: "core.worktree that git reads and a line-wise reader misses: a continuation hides a section header",
			setup: func(t *testing.T, ws string) {
				gitRepoAt(t, filepath.Join(ws, "x"), []string{"f"}, nil)
				gittest.WriteFiles(t, ws, "w/dist/t.txt")
				f, _ := os.OpenFile(filepath.Join(ws, "x/.git/config"), os.O_APPEND|os.O_WRONLY, 0)
				f.WriteString("[core]\n\tfoo = bar\\\n[x]\n\tworktree = ../../w\n")
				f.Close()
			},
			survive: []string{"w/dist/t.txt"},
			skipped: map[string]string{".": "core.worktree"},
		},
		{
			name: "core.worktree that git reads and a line-wise reader misses: a continuation hides the last value",
			setup: func(t *testing.T, ws string) {
				gitRepoAt(t, filepath.Join(ws, "x"), []string{"f"}, nil)
				gittest.WriteFiles(t, ws, "w/dist/t.txt")
				f, _ := os.OpenFile(filepath.Join(ws, "x/.git/config"), os.O_APPEND|os.O_WRONLY, 0)
				f.WriteString("[core]\n\tworktree = ../../w\n\tfoo = x\\\n\tworktree = ..\n")
				f.Close()
			},
			survive: []string{"w/dist/t.txt"},
			skipped: map[string]string{".": "core.worktree"},
		},
		{
			name: "core.worktree that git reads and a line-wise reader misses: two section headers on one line",
			setup: func(t *testing.T, ws string) {
				gitRepoAt(t, filepath.Join(ws, "x"), []string{"f"}, nil)
				gittest.WriteFiles(t, ws, "w/dist/t.txt")
				f, _ := os.OpenFile(filepath.Join(ws, "x/.git/config"), os.O_APPEND|os.O_WRONLY, 0)
				f.WriteString("[a][core]worktree = ../../w\n")
				f.Close()
			},
			survive: []string{"w/dist/t.txt"},
			skipped: map[string]string{".": "core.worktree"},
		},
		{
			name: "core.worktree that git reads and a line-wise reader misses: carriage returns between tokens",
			setup: func(t *testing.T, ws string) {
				gitRepoAt(t, filepath.Join(ws, "x"), []string{"f"}, nil)
				gittest.WriteFiles(t, ws, "w/dist/t.txt")
				f, _ := os.OpenFile(filepath.Join(ws, "x/.git/config"), os.O_APPEND|os.O_WRONLY, 0)
				f.WriteString("[x]\r[core]\rworktree = ../../w\n")
				f.Close()
			},
			survive: []string{"w/dist/t.txt"},
			skipped: map[string]string{".": "core.worktree"},
		},
		// What git reads where xfsq cannot (a link, a config it cannot
		// read, a path outside as the sandbox may see it inside) may set
		// core.worktree anywhere: the whole workspace stays.
		{
			name: "a .git that is a symlink to a git directory whose core.worktree is elsewhere",
			setup: func(t *testing.T, ws string) {
				gitRepoAt(t, filepath.Join(ws, "app"), []string{"f"}, nil)
				os.Rename(filepath.Join(ws, "app/.git"), filepath.Join(ws, "gd"))
				os.Symlink("../gd", filepath.Join(ws, "app/.git"))
				gittest.Run(t, filepath.Join(ws, "app"), "config", "core.worktree", "../proj")
				gittest.WriteFiles(t, ws, "proj/dist/tracked.js")
				gittest.Run(t, filepath.Join(ws, "app"), "add", "dist/tracked.js")
			},
			survive: []string{"proj/dist/tracked.js"},
			skipped: map[string]string{".": "whole workspace"},
		},
		{
			name: "a config xfsq cannot read (a symlink) that sets core.worktree",
			setup: func(t *testing.T, ws string) {
				gitRepoAt(t, filepath.Join(ws, "app"), []string{"f"}, nil)
				gittest.Run(t, filepath.Join(ws, "app"), "config", "core.worktree", "../../proj")
				os.Rename(filepath.Join(ws, "app/.git/config"), filepath.Join(ws, "cfg"))
				os.Symlink("../../cfg", filepath.Join(ws, "app/.git/config"))
				gittest.WriteFiles(t, ws, "proj/dist/tracked.js")
				gittest.Run(t, filepath.Join(ws, "app"), "add", "dist/tracked.js")
			},
			survive: []string{"proj/dist/tracked.js"},
			skipped: map[string]string{".": "whole workspace"},
		},
		{
			name: "a config too large for xfsq that sets core.worktree",
			setup: func(t *testing.T, ws string) {
				gitRepoAt(t, filepath.Join(ws, "app"), []string{"f"}, nil)
				gittest.Run(t, filepath.Join(ws, "app"), "config", "core.worktree", "../../proj")
				f, _ := os.OpenFile(filepath.Join(ws, "app/.git/config"), os.O_APPEND|os.O_WRONLY, 0)
				f.WriteString(strings.Repeat("#"+strings.Repeat("p", 1000)+"\n", 1100))
				f.Close()
				gittest.WriteFiles(t, ws, "proj/dist/tracked.js")
				gittest.Run(t, filepath.Join(ws, "app"), "add", "dist/tracked.js")
			},
			survive: []string{"proj/dist/tracked.js"},
			skipped: map[string]string{".": "whole workspace"},
		},
		{
			name: "a commondir xfsq cannot read (a symlink) naming a common directory in dist/",
			setup: func(t *testing.T, ws string) {
				gitRepoAt(t, filepath.Join(ws, "app"), []string{"f"}, nil)
				os.MkdirAll(filepath.Join(ws, "dist"), 0o755)
				os.Rename(filepath.Join(ws, "app/.git"), filepath.Join(ws, "dist/common"))
				os.MkdirAll(filepath.Join(ws, "app/.git"), 0o755)
				os.Rename(filepath.Join(ws, "dist/common/HEAD"), filepath.Join(ws, "app/.git/HEAD"))
				os.Rename(filepath.Join(ws, "dist/common/index"), filepath.Join(ws, "app/.git/index"))
				os.WriteFile(filepath.Join(ws, "cd"), []byte("../../dist/common\n"), 0o644)
				os.Symlink("../../cd", filepath.Join(ws, "app/.git/commondir"))
			},
			survive: []string{"dist/common/objects", "dist/common/refs", "dist/common/config"},
			skipped: map[string]string{".": "whole workspace"},
		},
		{
			name: "a .git file naming an absolute path outside the root, as the sandbox may see the workspace",
			setup: func(t *testing.T, ws string) {
				gitRepoAt(t, filepath.Join(ws, "gd"), []string{"f"}, nil)
				os.MkdirAll(filepath.Join(ws, "app"), 0o755)
				os.WriteFile(filepath.Join(ws, "app/.git"), []byte("gitdir: /workspace/gd/.git\n"), 0o644)
				gittest.WriteFiles(t, ws, "app/dist/tracked.js")
			},
			survive: []string{"app/dist/tracked.js"},
			skipped: map[string]string{".": "whole workspace"},
		},
		{
			name: "a repository in uploads/ (never swept) whose core.worktree is elsewhere",
			setup: func(t *testing.T, ws string) {
				gitRepoAt(t, filepath.Join(ws, "uploads/app"), []string{"f"}, nil)
				gittest.Run(t, filepath.Join(ws, "uploads/app"), "config", "core.worktree", "../../../proj")
				gittest.WriteFiles(t, ws, "proj/dist/keep.js")
				gittest.Run(t, filepath.Join(ws, "uploads/app"), "add", "dist/keep.js")
				gittest.WriteFiles(t, ws, "uploads/dist/x.js")
			},
			survive: []string{"proj/dist/keep.js", "uploads/dist/x.js"},
			skipped: map[string]string{".": "core.worktree"},
		},
		{
			name: "a repository in uploads/ whose common directory is in dist/",
			setup: func(t *testing.T, ws string) {
				gitRepoAt(t, filepath.Join(ws, "uploads/app"), []string{"f"}, nil)
				os.MkdirAll(filepath.Join(ws, "dist"), 0o755)
				os.Rename(filepath.Join(ws, "uploads/app/.git"), filepath.Join(ws, "dist/common"))
				os.MkdirAll(filepath.Join(ws, "uploads/app/.git"), 0o755)
				os.Rename(filepath.Join(ws, "dist/common/HEAD"), filepath.Join(ws, "uploads/app/.git/HEAD"))
				os.Rename(filepath.Join(ws, "dist/common/index"), filepath.Join(ws, "uploads/app/.git/index"))
				os.RemoveAll(filepath.Join(ws, "dist/common/logs"))
				os.WriteFile(filepath.Join(ws, "uploads/app/.git/commondir"), []byte("../../../dist/common\n"), 0o644)
			},
			survive: []string{"dist/common/objects", "dist/common/refs", "dist/common/config"},
		},
		{
			name: "a part of the workspace too deep to examine may hold a repository: the whole workspace stays",
			setup: func(t *testing.T, ws string) {
				deep := ws
				for range maxWalkDepth + 2 {
					deep = filepath.Join(deep, "d")
				}
				os.MkdirAll(deep, 0o755)
				gittest.WriteFiles(t, ws, "proj/dist/keep.js")
			},
			survive: []string{"proj/dist/keep.js"},
			skipped: map[string]string{".": "whole workspace"},
		},
		{
			name: "a .git file whose pointer is longer than any path git can open",
			setup: func(t *testing.T, ws string) {
				os.MkdirAll(filepath.Join(ws, "app/x"), 0o755)
				os.WriteFile(filepath.Join(ws, "app/.git"), []byte("gitdir: "+strings.Repeat("x/../", 2000)+"nothere\n"), 0o644)
				gittest.WriteFiles(t, ws, "proj/dist/keep.js")
			},
			survive: []string{"proj/dist/keep.js"},
			skipped: map[string]string{".": "whole workspace"},
		},
		{
			name: "a git directory not named .git (bare, made non-bare) whose core.worktree is its parent",
			setup: func(t *testing.T, ws string) {
				gd := filepath.Join(ws, "D/gd")
				os.MkdirAll(filepath.Join(ws, "D"), 0o755)
				gittest.Run(t, ws, "init", "-q", "--bare", gd)
				gittest.Run(t, ws, "--git-dir="+gd, "config", "core.bare", "false")
				gittest.Run(t, ws, "--git-dir="+gd, "config", "core.worktree", "..")
				gittest.WriteFiles(t, ws, "D/d.log")
				gittest.Run(t, ws, "--git-dir="+gd, "--work-tree="+filepath.Join(ws, "D"), "add", "d.log")
			},
			survive: []string{"D/d.log", "D/gd/HEAD"},
			skipped: map[string]string{".": "core.worktree"},
		},
		{
			name: "a git directory holding a .git git does not accept, whose core.worktree is its parent",
			setup: func(t *testing.T, ws string) {
				gd := filepath.Join(ws, "P/D2")
				os.MkdirAll(filepath.Join(ws, "P"), 0o755)
				gittest.Run(t, ws, "init", "-q", "--bare", gd)
				gittest.Run(t, ws, "--git-dir="+gd, "config", "core.bare", "false")
				gittest.Run(t, ws, "--git-dir="+gd, "config", "core.worktree", "..")
				os.Mkdir(filepath.Join(gd, ".git"), 0o755)
				gittest.WriteFiles(t, ws, "P/x.log")
				gittest.Run(t, ws, "--git-dir="+gd, "--work-tree="+filepath.Join(ws, "P"), "add", "x.log")
			},
			survive: []string{"P/x.log"},
			skipped: map[string]string{".": "core.worktree"},
		},
		{
			name: "a git directory of HEAD and commondir alone, whose config.worktree names its parent",
			setup: func(t *testing.T, ws string) {
				r := filepath.Join(ws, "r5")
				os.MkdirAll(r, 0o755)
				gittest.Run(t, r, "init", "-q", "--bare", "common.git")
				gittest.Run(t, filepath.Join(r, "common.git"), "config", "core.repositoryformatversion", "1")
				gittest.Run(t, filepath.Join(r, "common.git"), "config", "extensions.worktreeConfig", "true")
				os.MkdirAll(filepath.Join(r, "wt"), 0o755)
				os.WriteFile(filepath.Join(r, "wt/HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
				os.WriteFile(filepath.Join(r, "wt/commondir"), []byte("../common.git\n"), 0o644)
				os.WriteFile(filepath.Join(r, "wt/config.worktree"), []byte("[core]\n\tbare = false\n\tworktree = ..\n"), 0o644)
				gittest.WriteFiles(t, ws, "r5/build.log")
				gittest.Run(t, filepath.Join(r, "wt"), "add", "../build.log")
			},
			survive: []string{"r5/build.log"},
			skipped: map[string]string{".": "core.worktree"},
		},
		{
			// git resolves a relative core.worktree from the git directory it
			// runs in, the linked worktree's, whichever config holds it: read
			// from the common directory, the value named r/t, the directory
			// holding the .git file; git's worktree was t.
			name: "a common directory's core.worktree, read from the linked worktree's git directory",
			setup: func(t *testing.T, ws string) {
				gittest.Run(t, ws, "init", "-q", "r")
				gittest.Run(t, ws, "init", "-q", "--bare", "r/.git/x/cd")
				cd := filepath.Join(ws, "r/.git/x/cd")
				for _, kv := range [][2]string{{"core.bare", "false"}, {"core.repositoryformatversion", "1"},
					{"extensions.worktreeConfig", "true"}, {"core.worktree", "../../../t"}} {
					gittest.Run(t, cd, "config", kv[0], kv[1])
				}
				os.MkdirAll(filepath.Join(ws, "r/.git/gd"), 0o755)
				os.MkdirAll(filepath.Join(ws, "r/t"), 0o755)
				os.WriteFile(filepath.Join(ws, "r/.git/gd/HEAD"), []byte("ref: refs/heads/master\n"), 0o644)
				os.WriteFile(filepath.Join(ws, "r/.git/gd/commondir"), []byte("../x/cd\n"), 0o644)
				os.WriteFile(filepath.Join(ws, "r/t/.git"), []byte("gitdir: ../.git/gd\n"), 0o644)
				gittest.WriteFiles(t, ws, "t/dist/x.log")
				gittest.Run(t, filepath.Join(ws, "r/t"), "add", "-f", "dist/x.log")
				if top := strings.TrimSpace(gittest.Output(t, filepath.Join(ws, "r/t"), "rev-parse", "--show-toplevel")); top != filepath.Join(ws, "t") {
					t.Fatalf("git's worktree is %s: the fixture must put it at t", top)
				}
			},
			survive: []string{"t/dist/x.log"},
			skipped: map[string]string{".": "core.worktree"},
		},
		{
			name: "a git directory whose commondir goes through a symlink to a config setting core.worktree",
			setup: func(t *testing.T, ws string) {
				gittest.Run(t, ws, "init", "-q", "--bare", "real")
				for _, kv := range [][2]string{{"core.bare", "false"}, {"core.repositoryformatversion", "1"},
					{"extensions.worktreeConfig", "true"}, {"core.worktree", "../t"}} {
					gittest.Run(t, filepath.Join(ws, "real"), "config", kv[0], kv[1])
				}
				// No HEAD: real is no git directory of its own, only g's common one.
				os.Remove(filepath.Join(ws, "real/HEAD"))
				os.Symlink("real", filepath.Join(ws, "lnk"))
				os.MkdirAll(filepath.Join(ws, "g"), 0o755)
				os.WriteFile(filepath.Join(ws, "g/HEAD"), []byte("ref: refs/heads/master\n"), 0o644)
				os.WriteFile(filepath.Join(ws, "g/commondir"), []byte("../lnk\n"), 0o644)
				gittest.WriteFiles(t, ws, "t/dist/x.log")
				gittest.Run(t, ws, "--git-dir=g", "--work-tree=t", "add", "-f", "dist/x.log")
			},
			survive: []string{"t/dist/x.log"},
			skipped: map[string]string{".": "core.worktree"},
		},
		{
			// A line ending in a backslash continues the value before: git
			// reads the [extensions] line as part of it, and the format
			// that counts is sha256, not the sha1 the line seems to set.
			name: "an object format a line continuation hides",
			setup: func(t *testing.T, ws string) {
				gitRepoAt(t, filepath.Join(ws, "r2"), []string{"dist/a.log"}, nil)
				cfg := filepath.Join(ws, "r2/.git/config")
				old, _ := os.ReadFile(cfg)
				os.WriteFile(cfg, append(old, []byte("[user]\n\tname = x\\\n[extensions] objectformat = sha1\n")...), 0o644)
			},
			survive: []string{"r2/dist/a.log"},
			skipped: map[string]string{".": "object format"},
		},
		{
			// git reads [core "x"] worktree as core.x.worktree, not
			// core.worktree: a value there that names the repository's own
			// directory must not hide the core.worktree git does read.
			name: "a core.worktree behind a subsection that names the repository's own directory",
			setup: func(t *testing.T, ws string) {
				gitRepoAt(t, filepath.Join(ws, "r"), []string{"readme"}, nil)
				gittest.Run(t, filepath.Join(ws, "r"), "config", "core.worktree", "../../t")
				gittest.WriteFiles(t, ws, "t/dist/x.log")
				gittest.Run(t, filepath.Join(ws, "r"), "add", "-f", "dist/x.log")
				cfg := filepath.Join(ws, "r/.git/config")
				old, _ := os.ReadFile(cfg)
				os.WriteFile(cfg, append(old, []byte("[core \"x\"]\n\tworktree = ..\n")...), 0o644)
			},
			survive: []string{"t/dist/x.log"},
			skipped: map[string]string{".": "core.worktree"},
		},
		{
			name: "an object format in a subsection of extensions",
			setup: func(t *testing.T, ws string) {
				gitRepoAt(t, filepath.Join(ws, "r2"), []string{"dist/a.log"}, nil)
				cfg := filepath.Join(ws, "r2/.git/config")
				old, _ := os.ReadFile(cfg)
				os.WriteFile(cfg, append(old, []byte("[extensions \"x\"]\n\tobjectformat = sha256\n")...), 0o644)
			},
			survive: []string{"r2/dist/a.log"},
			skipped: map[string]string{".": "object format"},
		},
		{
			name: "a bare repository inside a trash directory is kept",
			setup: func(t *testing.T, ws string) {
				os.MkdirAll(filepath.Join(ws, "dist"), 0o755)
				gittest.Run(t, ws, "init", "-q", "--bare", filepath.Join(ws, "dist/mirror.git"))
				gittest.WriteFiles(t, ws, "dist/stale.js")
			},
			survive: []string{"dist/mirror.git/HEAD", "dist/mirror.git/config"},
			gone:    []string{"dist/stale.js"},
		},
		{
			name: "the workspace's own index is garbage: the whole workspace stays",
			setup: func(t *testing.T, ws string) {
				gitRepoAt(t, ws, []string{"dist/app.js"}, []string{"top.log"})
				os.WriteFile(filepath.Join(ws, ".git/index"), []byte("garbage"), 0o644)
			},
			survive: []string{"dist/app.js", "top.log"},
			skipped: map[string]string{".": "cannot be read"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			ws := filepath.Join(root, "projects/p")
			os.MkdirAll(ws, 0o755)
			c.setup(t, ws)
			ageTree(t, ws)
			g := gatherer(t, root)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			tree, err := g.Workspace(ctx, "projects/p")
			if err != nil {
				t.Fatalf("walk: %v", err)
			}
			plan := MakePlan([]Project{{Name: "p", Trees: []Tree{tree}}}, policy, time.Now())
			for _, ev := range plan.Evict {
				if strings.Contains("/"+ev.Path+"/", "/.git/") || treetest.Exists(filepath.Join(root, ev.Path, ".git")) {
					t.Errorf("planned %s: a .git, or a directory holding one", ev.Path)
				}
			}
			for _, keep := range c.planned {
				for _, ev := range plan.Evict {
					if strings.HasPrefix("projects/p/"+keep+"/", ev.Path+"/") {
						t.Errorf("planned %s, which holds %s", ev.Path, keep)
					}
				}
			}
			for rel, why := range c.skipped {
				p := "projects/p"
				if rel != "." {
					p += "/" + rel
				}
				found := false
				for _, s := range plan.Skipped {
					found = found || (s.Path == p && strings.Contains(s.Reason, why))
				}
				if !found {
					t.Errorf("%s not skipped for %q; skipped %+v", p, why, plan.Skipped)
				}
			}
			var journal []deletion.Record
			executor(t, root, &journal).Run(ctx, plan)
			for _, p := range c.survive {
				if !treetest.Exists(filepath.Join(ws, p)) {
					t.Errorf("%s was deleted (plan %v)", p, paths(plan.Evict))
				}
			}
			for _, p := range c.gone {
				if treetest.Exists(filepath.Join(ws, p)) {
					t.Errorf("untracked old trash %s survived (plan %v)", p, paths(plan.Evict))
				}
			}
		})
	}
}

// A tree with no repository is offered as before: trash directories whole.
func TestWorkspaceWithoutRepositories(t *testing.T) {
	root := t.TempDir()
	ws := filepath.Join(root, "projects/p")
	gittest.WriteFiles(t, ws, "dist/a.js", "dist/sub/b.js", "src/x.log", "src/main.go", "uploads/u.log", "inbox/i.tmp")
	ageTree(t, ws)
	tree, err := gatherer(t, root).Workspace(context.Background(), "projects/p")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, e := range tree.Entries {
		got[e.Path] = true
		if e.Path == "projects/p/dist" && (e.Bytes == 0 || !e.Dir) {
			t.Errorf("dist offered as %+v: its size is missing", e)
		}
	}
	want := map[string]bool{"projects/p/dist": true, "projects/p/src/x.log": true}
	if len(got) != len(want) || !got["projects/p/dist"] || !got["projects/p/src/x.log"] {
		t.Errorf("offered %v, want %v", got, want)
	}
}

// A cancelled sweep stops walking.
func TestWorkspaceHonoursCancellation(t *testing.T) {
	root := t.TempDir()
	gittest.WriteFiles(t, filepath.Join(root, "projects/p"), "a/b.log")
	g := gatherer(t, root)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := g.Workspace(ctx, "projects/p"); err != context.Canceled {
		t.Errorf("a cancelled walk: %v, want context.Canceled", err)
	}
}

// gatherer walks the sandbox root at root with the default trash globs.
func gatherer(t *testing.T, root string) *Gatherer {
	t.Helper()
	d, err := saferm.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return &Gatherer{Root: d, Globs: policy.TrashGlobs}
}

// What git starts tracking between the plan and the deletion stays: the
// index is read again just before each workspace entry goes, as freshness
// and leases are. git add changes nothing in the entry itself (the index
// is in .git, the file keeps its mtime), so no other re-check sees it.
func TestFilesTrackedAfterPlanningSurvive(t *testing.T) {
	cases := []struct {
		name   string
		after  func(t *testing.T, ws string) // between plan and execution
		keep   string                        // workspace-relative
		reason string
	}{
		{"git add -f of a file in a planned directory", func(t *testing.T, ws string) {
			gittest.Run(t, filepath.Join(ws, "R"), "add", "-f", "dist/keep.js")
		}, "R/dist/keep.js", "tracked since planning"},
		{"git add -f of a planned file", func(t *testing.T, ws string) {
			gittest.Run(t, filepath.Join(ws, "R"), "add", "-f", "old.log")
		}, "R/old.log", "tracked since planning"},
		{"a repository made above a planned directory", func(t *testing.T, ws string) {
			gitRepoAt(t, filepath.Join(ws, "Q"), []string{"q.txt"}, nil)
			gittest.Run(t, filepath.Join(ws, "Q"), "add", "-f", "dist/kept.js")
		}, "Q/dist/kept.js", "tracked since planning"},
		{"an index made unreadable", func(t *testing.T, ws string) {
			os.WriteFile(filepath.Join(ws, "R/.git/index"), []byte("garbage"), 0o644)
		}, "R/dist/keep.js", "cannot be read"},
		// Unpacked with old times (tar, cp -a keep them): freshness
		// cannot tell, what the directory holds can.
		{"a back-dated repository made inside a planned directory", func(t *testing.T, ws string) {
			gitRepoAt(t, filepath.Join(ws, "Q/dist/sub/repo"), []string{"s.txt"}, nil)
			ageTree(t, ws)
		}, "Q/dist/sub/repo/.git/HEAD", "git repository"},
		{"a back-dated git directory made inside a planned directory", func(t *testing.T, ws string) {
			gitRepoAt(t, filepath.Join(ws, "E"), []string{"e.txt"}, nil, "--separate-git-dir="+filepath.Join(ws, "Q/dist/sep.git"))
			ageTree(t, ws)
		}, "Q/dist/sep.git/HEAD", "git directory"},
		// A linked worktree's git directory: HEAD and commondir, no objects.
		{"a worktree's git directory moved into a planned directory", func(t *testing.T, ws string) {
			gittest.WriteFiles(t, ws, "Q/dist/wt/HEAD", "Q/dist/wt/commondir")
			ageTree(t, ws)
		}, "Q/dist/wt/HEAD", "git directory"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			ws := filepath.Join(root, "projects/p")
			gitRepoAt(t, filepath.Join(ws, "R"), []string{"r.txt"}, []string{"dist/keep.js", "old.log"})
			gittest.WriteFiles(t, ws, "Q/dist/kept.js", "other/stale.log")
			ageTree(t, ws)
			ctx := context.Background()
			tree, err := gatherer(t, root).Workspace(ctx, "projects/p")
			if err != nil {
				t.Fatal(err)
			}
			plan := MakePlan([]Project{{Name: "p", Trees: []Tree{tree}}}, policy, time.Now())
			if !slices.ContainsFunc(paths(plan.Evict), func(p string) bool { return strings.HasPrefix("projects/p/"+c.keep+"/", p+"/") }) {
				t.Fatalf("%s not planned (plan %v): the case tests nothing", c.keep, paths(plan.Evict))
			}
			c.after(t, ws)
			var journal []deletion.Record
			res := executor(t, root, &journal).Run(ctx, plan)
			if !treetest.Exists(filepath.Join(ws, c.keep)) {
				t.Errorf("%s, tracked before its deletion, was deleted (result %+v)", c.keep, res)
			}
			if !slices.ContainsFunc(res.Skipped, func(s Skip) bool { return strings.Contains(s.Reason, c.reason) }) {
				t.Errorf("no entry left because %q: skipped %+v", c.reason, res.Skipped)
			}
			if treetest.Exists(filepath.Join(ws, "other/stale.log")) {
				t.Errorf("other/stale.log, untracked trash of no repository, survived: the re-check keeps everything")
			}
		})
	}
}

// A tenant rewriting its index between every two deletions makes each
// re-check parse it anew (up to 128 MiB): after a few, the rest of that
// repository's entries wait for the next sweep instead of stalling this
// one, and entries elsewhere still go.
func TestAnIndexChangingAllTheTimeIsLeftForTheNextSweep(t *testing.T) {
	root := t.TempDir()
	ws := filepath.Join(root, "projects/p")
	var logs []string
	for i := range 10 {
		logs = append(logs, fmt.Sprintf("a%d.log", i))
	}
	gitRepoAt(t, filepath.Join(ws, "R"), []string{"r.txt"}, logs)
	gittest.WriteFiles(t, ws, "other/stale.log")
	ageTree(t, ws)
	ctx := context.Background()
	tree, err := gatherer(t, root).Workspace(ctx, "projects/p")
	if err != nil {
		t.Fatal(err)
	}
	plan := MakePlan([]Project{{Name: "p", Trees: []Tree{tree}}}, policy, time.Now())
	var journal []deletion.Record
	x := executor(t, root, &journal)
	journalled := x.Journal
	n := 0
	x.Journal = func(ctx context.Context, project string, rec deletion.Record) error {
		if rec.State == deletion.StatePending {
			n++
			later := time.Now().Add(time.Duration(n) * time.Second)
			os.Chtimes(filepath.Join(ws, "R/.git/index"), later, later)
		}
		return journalled(ctx, project, rec)
	}
	res := x.Run(ctx, plan)
	busy := 0
	for _, s := range res.Skipped {
		if strings.Contains(s.Reason, "changed") && strings.Contains(s.Reason, "during this sweep") {
			busy++
		}
	}
	if busy == 0 || busy > len(logs)-maxIndexParses+1 {
		t.Errorf("%d entries left as busy, want the %d after the first %d parses (skipped %+v)", busy, len(logs)-maxIndexParses, maxIndexParses, res.Skipped)
	}
	if treetest.Exists(filepath.Join(ws, "other/stale.log")) {
		t.Error("other/stale.log, outside the busy repository, was left too")
	}
}

// Indexes are parsed up to a budget per walk: a tenant's hundreds of copies
// or links of one large index would otherwise make a sweep of every
// project spend minutes and gigabytes. Past it, nothing of the workspace
// is offered, and the reason says why.
func TestIndexesPastTheBudgetProtectTheWorkspace(t *testing.T) {
	root := t.TempDir()
	ws := filepath.Join(root, "projects/p")
	gitRepoAt(t, filepath.Join(ws, "r0"), []string{"a.txt", "b.txt"}, nil)
	fi, err := os.Stat(filepath.Join(ws, "r0/.git/index"))
	if err != nil {
		t.Fatal(err)
	}
	g := gatherer(t, root)
	g.indexBudget = 3 * fi.Size() // three of the five below
	for i := 1; i < 5; i++ {
		os.MkdirAll(filepath.Join(ws, fmt.Sprintf("r%d/.git", i)), 0o755)
		for _, f := range []string{"HEAD", "index"} {
			if err := os.Link(filepath.Join(ws, "r0/.git", f), filepath.Join(ws, fmt.Sprintf("r%d/.git", i), f)); err != nil {
				t.Fatal(err)
			}
		}
	}
	gittest.WriteFiles(t, ws, "top.log")
	ageTree(t, ws)
	tree, err := g.Workspace(context.Background(), "projects/p")
	if err != nil {
		t.Fatal(err)
	}
	if len(tree.Entries) != 0 || len(tree.Skipped) != 1 || !strings.Contains(tree.Skipped[0].Reason, "more than") {
		t.Errorf("past the budget: entries %v, skipped %+v; want nothing offered, the whole workspace skipped for the budget", tree.Entries, tree.Skipped)
	}
	g.indexBudget = 5 * fi.Size()
	if tree, err := g.Workspace(context.Background(), "projects/p"); err != nil || len(tree.Entries) != 1 {
		t.Errorf("within the budget: %v, entries %v, skipped %+v; want top.log offered", err, tree.Entries, tree.Skipped)
	}
}

// A split index that does not change during a sweep is read once: each
// entry below its repository is re-checked against it without parsing it
// again, so none is left as if the index were changing all the time.
func TestAnUnchangedSplitIndexIsReadOnce(t *testing.T) {
	root := t.TempDir()
	ws := filepath.Join(root, "projects/p")
	var logs []string
	for i := range 3 * maxIndexParses {
		logs = append(logs, fmt.Sprintf("a%d.log", i))
	}
	gitRepoAt(t, filepath.Join(ws, "R"), []string{"r.txt"}, logs)
	gittest.Run(t, filepath.Join(ws, "R"), "update-index", "--split-index")
	ageTree(t, ws)
	ctx := context.Background()
	tree, err := gatherer(t, root).Workspace(ctx, "projects/p")
	if err != nil {
		t.Fatal(err)
	}
	plan := MakePlan([]Project{{Name: "p", Trees: []Tree{tree}}}, policy, time.Now())
	if len(plan.Evict) != len(logs) {
		t.Fatalf("planned %v, want the %d logs", paths(plan.Evict), len(logs))
	}
	var journal []deletion.Record
	res := executor(t, root, &journal).Run(ctx, plan)
	if len(res.Evicted) != len(logs) {
		t.Errorf("swept %d of %d untracked logs under an unchanged split index; skipped %+v", len(res.Evicted), len(logs), res.Skipped)
	}
	if !treetest.Exists(filepath.Join(ws, "R/r.txt")) {
		t.Error("the tracked r.txt went")
	}
}

// The paths indexes name count against the same budget, as they are read:
// small files whose paths come to more than it (each within its own bound)
// protect the workspace, however many walkers parse them at once.
func TestIndexPathsPastTheBudgetProtectTheWorkspace(t *testing.T) {
	root := t.TempDir()
	ws := filepath.Join(root, "projects/p")
	index := gittest.V4Growing(50, strings.Repeat("a", 20)) // 25 KiB of paths in 4 KiB
	g := gatherer(t, root)
	g.indexBudget = 40 << 10 // two indexes' files fit, their paths do not
	for i := range 2 {
		git := filepath.Join(ws, fmt.Sprintf("r%d/.git", i))
		os.MkdirAll(git, 0o755)
		os.WriteFile(filepath.Join(git, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
		os.WriteFile(filepath.Join(git, "index"), index, 0o644)
	}
	gittest.WriteFiles(t, ws, "top.log")
	ageTree(t, ws)
	tree, err := g.Workspace(context.Background(), "projects/p")
	if err != nil {
		t.Fatal(err)
	}
	if len(tree.Entries) != 0 || len(tree.Skipped) != 1 || !strings.Contains(tree.Skipped[0].Reason, "paths of the git indexes") {
		t.Errorf("paths past the budget: entries %v, skipped %+v; want the whole workspace skipped", tree.Entries, tree.Skipped)
	}
}
