package identity

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/internal/testsupport/storetest"
	"github.com/xfsq/xfsq/store"
)

const (
	idA = "0f1e2d3c-4b5a-4978-8a6b-5c4d3e2f1a0b"
	idB = "11111111-2222-4333-9444-555555555555"
)

// Read gives the identity the file holds, trimmed; "" with no file; a
// file that holds no version-4 UUID is refused as damaged (NotReady, the
// way out named), and one that cannot be read is its read error.
func TestRead(t *testing.T) {
	for _, c := range []struct {
		name    string
		content *string // nil: no file
		dir     bool    // root-id is a directory
		special string  // root-id is a "fifo", a "link" to a file holding idA, or a link to /dev/"zero"
		want    string
		damaged bool // refused as not an identity
		fails   bool // refused otherwise
	}{
		{name: "none yet", want: ""},
		{name: "as written", content: new(idA + "\n"), want: idA},
		{name: "spaces around", content: new("  " + idA + " \n\n"), want: idA},
		{name: "empty", content: new(""), damaged: true},
		{name: "upper case", content: new(strings.ToUpper(idA)), damaged: true},
		{name: "version 1", content: new("0f1e2d3c-4b5a-1978-8a6b-5c4d3e2f1a0b"), damaged: true},
		{name: "two identities", content: new(idA + "\n" + idB + "\n"), damaged: true},
		{name: "a directory", dir: true, fails: true},
		// Not a file of an identity: refused at once, never waited on or
		// read without end.
		{name: "a FIFO", special: "fifo", damaged: true},
		{name: "a link to an identity", special: "link", damaged: true},
		{name: "a link to /dev/zero", special: "zero", damaged: true},
		{name: "longer than any identity", content: new(idA + strings.Repeat(" ", 5000)), damaged: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, rootIDFile)
			switch {
			case c.dir:
				if err := os.Mkdir(p, 0o700); err != nil {
					t.Fatal(err)
				}
			case c.content != nil:
				if err := os.WriteFile(p, []byte(*c.content), 0o600); err != nil {
					t.Fatal(err)
				}
			case c.special != "":
				makeSpecial(t, p, c.special)
			}
			var got string
			var err error
			read := make(chan struct{})
			go func() { got, err = Read(dir); close(read) }()
			select {
			case <-read:
			case <-time.After(10 * time.Second):
				t.Fatal("Read waits on the file")
			}
			isDamaged := err != nil && strings.Contains(err.Error(), "does not hold a root identity")
			switch {
			case c.damaged:
				if !isDamaged || errkind.Of(err) != errkind.NotReady || !strings.Contains(errkind.HintOf(err), "take_over_host") || got != "" {
					t.Errorf("Read: %q, %v (%v, hint %q); want it refused as damaged (NotReady), the way out named", got, err, errkind.Of(err), errkind.HintOf(err))
				}
			case c.fails:
				if err == nil || isDamaged || got != "" {
					t.Errorf("Read: %q, %v; want the read's own error", got, err)
				}
			case err != nil || got != c.want:
				t.Errorf("Read: %q, %v; want %q", got, err, c.want)
			}
		})
	}
}

// makeSpecial makes p a FIFO, a link to a file holding idA, or a link to
// /dev/zero.
func makeSpecial(t *testing.T, p, kind string) {
	t.Helper()
	var err error
	switch kind {
	case "fifo":
		err = syscall.Mkfifo(p, 0o600)
	case "link":
		target := p + ".real"
		if err = os.WriteFile(target, []byte(idA+"\n"), 0o600); err == nil {
			err = os.Symlink(target, p)
		}
	case "zero":
		err = os.Symlink("/dev/zero", p)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// rootIDPattern is what isRootID checks by hand.
var rootIDPattern = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
})

// isRootID accepts what its pattern does and nothing else: every byte
// value at every position of valid identities, each shortened and
// lengthened at every position, and odd whole strings.
func TestIsRootIDIsItsPattern(t *testing.T) {
	check := func(s string) {
		if got, want := isRootID(s), rootIDPattern().MatchString(s); got != want {
			t.Errorf("isRootID(%q) = %v, its pattern says %v", s, got, want)
		}
	}
	for _, s := range []string{"", "-", strings.Repeat("0", 36), strings.ToUpper(idA), idA + "\n", " " + idA, idA[:35] + "\x00"} {
		check(s)
	}
	for _, id := range []string{idA, idB, New(), "ffffffff-ffff-4fff-bfff-ffffffffffff", "00000000-0000-4000-8000-000000000000"} {
		check(id)
		for i := range len(id) {
			check(id[:i] + id[i+1:])
			for c := range 256 {
				check(id[:i] + string(rune(c)) + id[i+1:])
				check(id[:i] + string([]byte{byte(c)}) + id[i+1:])
				check(id[:i] + string([]byte{byte(c)}) + id[i:])
			}
		}
	}
}

// New is a version-4 UUID, as Read accepts it, a new one each time.
func TestNew(t *testing.T) {
	seen := map[string]bool{}
	for range 200 {
		id := New()
		if !rootIDPattern().MatchString(id) || seen[id] {
			t.Fatalf("New() = %q: not a version-4 UUID, or given twice", id)
		}
		seen[id] = true
	}
}

// Write replaces the identity file whole (Read gives what was written
// last), readable by the owner only, leaving no temporary file; into a
// state directory that does not exist it fails and makes nothing.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	for _, id := range []string{idA, idB} {
		if err := Write(dir, id); err != nil {
			t.Fatal(err)
		}
		if got, err := Read(dir); err != nil || got != id {
			t.Errorf("Read after Write(%s): %q, %v", id, got, err)
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, rootIDFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the identity file: %v, %v; want mode 0600", fi.Mode(), err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the state directory holds %d entries, want the identity file alone", len(entries))
	}
	missing := filepath.Join(dir, "nowhere")
	if err := Write(missing, idA); err == nil {
		t.Error("Write into a missing directory succeeded")
	}
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Write into a missing directory made it: %v", err)
	}
}

// Refusal names what is bound where and the way out (the host field, a
// take-over); a host name or a path holding % is shown as it is, not read
// as a format.
func TestRefusal(t *testing.T) {
	at := time.Date(2026, 3, 4, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name     string
		rootID   string
		conflict store.BindConflict
		want     []string // in the error
		hint     string   // in the hint
	}{
		{name: "root bound to another host", rootID: idA,
			conflict: store.BindConflict{Bound: &store.RootBinding{Host: "bu%sy", RootID: idA, BoundAt: at}},
			want:     []string{`bound to host "bu%sy" (since 2026-03-04), not to host "h1"`}, hint: "host: host bu%sy"},
		{name: "a copy of the bound root", rootID: idA,
			conflict: store.BindConflict{Held: &store.RootBinding{Host: "h1", RootID: idA, FSID: "uuid:old", Path: "/srv/root"}},
			want:     []string{"copied or restored elsewhere", "uuid:old", "uuid:new"}, hint: "take_over_host"},
		{name: "the host held by another root", rootID: idA,
			conflict: store.BindConflict{Held: &store.RootBinding{Host: "h1", RootID: idB, FSID: "uuid:old", Path: "/srv/50%d"}},
			want:     []string{"bound to another root (/srv/50%d, identity " + idB + ")", "this root (/srv/root)"}, hint: "/srv/50%d"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := Refusal("/srv/root", "h1", c.rootID, "uuid:new", &c.conflict)
			hint := errkind.HintOf(err)
			if errkind.Of(err) != errkind.Conflict || strings.Contains(err.Error()+hint, "%!") {
				t.Errorf("%v (%v), hint %q: want a Conflict, no format garbage", err, errkind.Of(err), hint)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if !strings.Contains(hint, c.hint) {
				t.Errorf("hint %q: want %q in it", hint, c.hint)
			}
		})
	}
}

// Check reads the bindings only: a root bound as asked is bound; one not
// yet bound, moved, or whose filesystem cannot be read is let through
// for the core to bind; a host name held by another root is refused
// unless taken over, and a root bound to another host name always.
func TestCheck(t *testing.T) {
	ctx := context.Background()
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		st, err := store.Open(ctx, dsn, "h1")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		other, err := store.Open(ctx, dsn, "h2")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { other.Close() })
		if ok, err := Check(ctx, st, "/srv/root", "", "uuid:1", false); ok || err != nil {
			t.Errorf("nothing bound, no identity yet: %v %v; want let through", ok, err)
		}
		if err := st.Bind(ctx, store.RootBinding{RootID: idA, FSID: "uuid:1", Path: "/srv/root"}, "init", "t", "", false); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			name           string
			st             *store.Store
			root, id, fsID string
			takeOver       bool
			bound          bool
			refused        string // in the refusal; "": none
		}{
			{name: "bound as asked", st: st, root: "/srv/root", id: idA, fsID: "uuid:1", bound: true},
			{name: "its filesystem unreadable", st: st, root: "/srv/root", id: idA, bound: true},
			{name: "moved", st: st, root: "/mnt/root", id: idA, fsID: "uuid:1"},
			{name: "copied", st: st, root: "/srv/root", id: idA, fsID: "uuid:2"},
			{name: "another root under the name", st: st, root: "/srv/two", id: idB, fsID: "uuid:2", refused: "bound to another root"},
			{name: "another root taking the name over", st: st, root: "/srv/two", id: idB, fsID: "uuid:2", takeOver: true},
			{name: "a new root under the name", st: st, root: "/srv/two", fsID: "uuid:2", refused: "bound to another root"},
			{name: "the root under another name", st: other, root: "/srv/root", id: idA, fsID: "uuid:1", refused: `bound to host "h1"`},
			{name: "the root taking another name", st: other, root: "/srv/root", id: idA, fsID: "uuid:1", takeOver: true, refused: `bound to host "h1"`},
		} {
			bound, err := Check(ctx, c.st, c.root, c.id, c.fsID, c.takeOver)
			switch {
			case c.refused != "":
				if err == nil || errkind.Of(err) != errkind.Conflict || !strings.Contains(err.Error(), c.refused) || bound {
					t.Errorf("%s: %v %v; want a Conflict saying %q", c.name, bound, err, c.refused)
				}
			case err != nil || bound != c.bound:
				t.Errorf("%s: %v %v; want bound %v, no error", c.name, bound, err, c.bound)
			}
		}
		if _, mine, _, ok, err := st.Bindings(ctx, idB); err != nil || ok {
			t.Errorf("Check wrote a binding: %+v %v %v", mine, ok, err)
		}
	})
}
