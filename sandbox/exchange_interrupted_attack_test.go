package sandbox_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/internal/testsupport/fixture"
	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/sandbox"
	"github.com/xfsq/xfsq/store"
)

// exchangeLoop swaps a and b (RENAME_EXCHANGE) as fast as it can until
// the returned stop is called, or for 5 s at most.
func exchangeLoop(a, b string) (stop func() int) {
	var wg sync.WaitGroup
	quit := make(chan struct{})
	n := 0
	wg.Go(func() {
		end := time.Now().Add(5 * time.Second)
		for time.Now().Before(end) {
			select {
			case <-quit:
				return
			default:
			}
			if unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE) == nil {
				n++
			}
		}
	})
	return func() int { close(quit); wg.Wait(); return n }
}

// names lists dir, sorted.
func names(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}

// TestInterruptedWorkUnderExchangeLoopAttack: an add or a removal of p was
// killed half-way; while doctor --fix rolls the add back, or project rm
// --purge finishes the removal, p's tenant swaps (RENAME_EXCHANGE, a tight
// loop) a skeleton directory or a directory of its own with a symlink to
// a directory outside the root, or with a directory holding files. The
// canary outside the root is untouched; the rollback removes nothing that
// holds anything (the tenant's files are all still in its tree); each
// deletion of the purge is journalled pending first, and a settled record
// that left anything is not "done". Held (attack6): RemoveEmptyTree only
// rmdirs relative to descriptors opened through no link; saferm looks at
// each entry with statx, opens it with openat2 beneath its parent and
// checks the inode it opened is the one it looked at.
func TestInterruptedWorkUnderExchangeLoopAttack(t *testing.T) {
	for _, state := range []string{store.StateAdding, store.StateRemoving} {
		for _, swap := range []struct{ name, a, b string }{
			{"uploads-link", "uploads", "evil"},
			{"uploads-full", "uploads", "full"},
			{"data-link", "data", "evil"},
			{"inbox-uploads", "inbox", "uploads"},
		} {
			t.Run(state+"-"+swap.name, func(t *testing.T) {
				fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
					m, ctx := r.Manager, r.Ctx
					r.Add(100<<20, "p")
					canary := t.TempDir()
					if err := os.WriteFile(filepath.Join(canary, "keep"), []byte("outside the root"), 0o644); err != nil {
						t.Fatal(err)
					}
					if err := os.Mkdir(filepath.Join(canary, "sub"), 0o755); err != nil {
						t.Fatal(err)
					}
					tree := filepath.Join(m.Root, "projects", "p")
					for _, d := range []string{"full", "data"} {
						os.Mkdir(filepath.Join(tree, d), 0o755)
					}
					os.WriteFile(filepath.Join(tree, "full", "precious"), []byte("tenant data"), 0o644)
					os.WriteFile(filepath.Join(tree, "inbox", "mail"), []byte("tenant mail"), 0o644)
					if err := os.Symlink(canary, filepath.Join(tree, "evil")); err != nil {
						t.Fatal(err)
					}
					leaveHalfway(t, r, "p", state)
					stop := exchangeLoop(filepath.Join(tree, swap.a), filepath.Join(tree, swap.b))
					done := make(chan error, 1)
					go func() {
						if state == store.StateAdding {
							_, err := m.Doctor(ctx, true)
							done <- err
							return
						}
						_, err := m.Remove(ctx, "p", sandbox.RemoveOptions{Purge: true, Force: true})
						done <- err
					}()
					select {
					case err := <-done:
						t.Logf("%s: %v; %d exchanges", state, err, stop())
					case <-time.After(3 * time.Second):
						stop()
						t.Fatal("the operation did not answer within 3 s")
					}
					if got := names(t, canary); strings.Join(got, ",") != "keep,sub" {
						t.Errorf("the canary outside the root now holds %v, want keep and sub", got)
					}
					if b, err := os.ReadFile(filepath.Join(canary, "keep")); err != nil || string(b) != "outside the root" {
						t.Errorf("the canary file outside the root: %q, %v", b, err)
					}
					if state == store.StateAdding {
						// The rollback removes only what is empty: the tenant's files stay.
						for _, f := range []string{"precious", "mail"} {
							found := false
							filepath.WalkDir(tree, func(p string, d os.DirEntry, err error) error {
								if err == nil && d.Name() == f {
									found = true
								}
								return nil
							})
							if !found {
								t.Errorf("rolling back the interrupted add removed the tenant's %s", f)
							}
						}
						return
					}
					pending, settled := 0, 0
					for _, e := range r.Events(journal.TypeEvicted) {
						var ev journal.Evicted
						if err := json.Unmarshal(e.Payload, &ev); err != nil {
							t.Fatal(err)
						}
						if ev.State == journal.StatePending {
							pending++
							continue
						}
						settled++
						if len(ev.Left) > 0 && ev.State == journal.StateDone {
							t.Errorf("a purge record left %v and says done", ev.Left)
						}
						t.Logf("%s %s: %d entries, left %v", ev.Path, ev.State, ev.Entries, ev.Left)
					}
					if pending == 0 || pending != settled {
						t.Errorf("%d pending and %d settled records for the purge", pending, settled)
					}
				})
			})
		}
	}
}
