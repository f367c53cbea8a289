package saferm

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/internal/testsupport/tenanttest"
	"github.com/xfsq/xfsq/internal/testsupport/treetest"
)

// TestExchangedLinksAmidARecursiveRemovalAreNeverFollowed: while a
// recursive removal empties a tree, its tenant atomically exchanges
// (RENAME_EXCHANGE) directories at every depth of it with symlinks that
// lead out of it — to a directory beside the root, by absolute path, and
// to a sibling tree of the same root, by a relative one — over and over.
// The removal looks at each entry (statx) and then opens it: an exchange
// landing between the two hands it a symlink where it saw a directory,
// which it must neither follow (the open refuses links) nor take for the
// directory it saw (the opened inode is checked against the one looked
// at). Nothing outside the removed tree is removed or changed, whatever
// the interleaving, and with both resolvers.
func TestExchangedLinksAmidARecursiveRemovalAreNeverFollowed(t *testing.T) {
	forEachResolver(t, func(t *testing.T) {
		deadline := time.Now().Add(3 * time.Second)
		rounds := 0
		for ; rounds < 40 && time.Now().Before(deadline); rounds++ {
			base := t.TempDir()
			root, outside := filepath.Join(base, "root"), filepath.Join(base, "outside")
			// What must stay: a tree beside the root and a sibling tree in it.
			canaries := []string{}
			for i := range 20 {
				for _, dir := range []string{outside, filepath.Join(root, "other")} {
					p := filepath.Join(dir, "s", "f"+strconv.Itoa(i))
					treetest.Write(t, p, 10)
					canaries = append(canaries, p)
				}
			}
			// The removed tree: directories a, a/b, a/b/c, each with files,
			// and beside each a symlink leading out.
			dirs := []string{"d/a", "d/a/b", "d/a/b/c"}
			for _, p := range dirs {
				for i := range 30 {
					treetest.Write(t, filepath.Join(root, p, "f"+strconv.Itoa(i)), 10)
				}
			}
			links := map[string]string{}
			for i, p := range dirs {
				link := filepath.Join(root, p+"-link")
				target := filepath.Join(outside, "s")
				if i%2 == 1 {
					// Relative, to the sibling tree: ../../other/s from d/a/b-link.
					rel, _ := filepath.Rel(filepath.Dir(link), filepath.Join(root, "other/s"))
					target = rel
				}
				if err := os.Symlink(target, link); err != nil {
					t.Fatal(err)
				}
				links[filepath.Join(root, p)] = link
			}
			stop := tenanttest.Loop(t, func() {
				for dir, link := range links {
					unix.Renameat2(unix.AT_FDCWD, dir, unix.AT_FDCWD, link, unix.RENAME_EXCHANGE)
				}
			})
			d, err := Open(root)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := d.Remove(context.Background(), "d", Options{ConfirmLastLink: true})
			stop()
			d.Close()
			if err != nil {
				t.Fatalf("round %d: remove amid exchanges: %v", rounds, err)
			}
			for _, p := range canaries {
				if !treetest.Exists(p) {
					t.Fatalf("round %d: %s went: the removal followed an exchanged-in symlink (%+v)", rounds, p, rep)
				}
			}
			for _, dir := range []string{filepath.Join(outside, "s"), filepath.Join(root, "other/s")} {
				if ents, err := os.ReadDir(dir); err != nil || len(ents) != 20 {
					t.Fatalf("round %d: %s holds %d entries (%v), want its 20", rounds, dir, len(ents), err)
				}
			}
		}
		t.Logf("%d rounds", rounds)
	})
}
