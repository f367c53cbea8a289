package files_test

import (
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/xfsq/xfsq/internal/testsupport/mounttest"
)

// mountingBody is an upload's body during which the tenant acts: it gives
// its data, then runs act (once), then ends.
type mountingBody struct {
	data []byte
	act  func()
	done bool
}

func (b *mountingBody) Read(p []byte) (int, error) {
	if len(b.data) > 0 {
		n := copy(p, b.data)
		b.data = b.data[n:]
		return n, nil
	}
	if !b.done {
		b.done = true
		b.act()
	}
	return 0, io.EOF
}

// TestAWriteWhoseTargetIsMountedOverMidBodyNeverWaits: a tenant starts an
// upload to a name of its tree and, while the body streams (after the
// write checked its target), mounts a FUSE filesystem whose server never
// answers on that very name: over the file the write replaces, over a
// file it made there meanwhile, or over a directory made there. Placing
// the written file looks at the name again; a look that crosses onto the
// mount asks the stalled server and waits with no bound, holding a thread
// and the tree's placing lock (in this process and, through place.lock,
// in every other), so no later write to the tree ever lands either. The
// write must end, refused or not, without waiting on the mount; a write
// to another project meanwhile goes through, and nothing outside the
// tree changes.
//
// Every look of put.go at the target and the temporary name is
// nomount.Lstat (found by a hostile-tenant round: place's fstatat of the
// target followed the mount and waited on its server).
func TestAWriteWhoseTargetIsMountedOverMidBodyNeverWaits(t *testing.T) {
	cases := []struct {
		name   string
		before func(p string) // what stands at the target when the write begins
		during func(p string) // what the tenant makes there before mounting
	}{
		{"over the replaced file", func(p string) { os.WriteFile(p, []byte("old"), 0o644) }, func(string) {}},
		{"over a file made meanwhile", func(string) {}, func(p string) { os.WriteFile(p, []byte("mine"), 0o644) }},
		{"over a directory made meanwhile", func(string) {}, func(p string) { os.Mkdir(p, 0o755) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newSandbox(t, filepath.Join(t.TempDir(), "db"), "a", "b", "other")
			canary := plantCanary(t, s.root)
			target := filepath.Join(s.root, "projects/a/t")
			c.before(target)
			putEndsDespiteAMount(t, s, "t", "its target", func() {
				c.during(target)
				mounttest.StalledFUSE(t, target)
			})
			canary.check(t, "a write whose target was mounted over")
		})
	}
}

// putEndsDespiteAMount puts name into project a with a body during
// which the tenant mounts (mount, run on the test's goroutine, as
// mounttest may skip or fail the test, while the body waits for it), and
// holds that the put ends within 3 s, refused or not, and that a write to
// project b meanwhile lands. where names what was mounted over.
func putEndsDespiteAMount(t *testing.T, s *testRoot, name, where string, mount func()) {
	t.Helper()
	mountNow, mounted := make(chan struct{}), make(chan struct{})
	body := &mountingBody{data: []byte("new content"), act: func() {
		close(mountNow)
		<-mounted
	}}
	got, ended := make(chan error, 1), make(chan struct{})
	go func() {
		defer close(ended)
		_, err := s.l.Put(ctx, "a", "", name, body, -1)
		got <- err
	}()
	// Registered before the mount, so run after its cleanup, which ends a
	// put stalled on it: the store outlives the put.
	t.Cleanup(func() { <-ended })
	<-mountNow
	mount()
	close(mounted)
	select {
	case err := <-got:
		t.Logf("put with %s mounted over mid-body: %v", where, err)
	case <-time.After(3 * time.Second):
		t.Errorf("put waited on the stalled FUSE server mounted over %s", where)
	}
	other := make(chan error, 1)
	go func() { other <- s.put("b", "f", []byte("x"), true) }()
	select {
	case err := <-other:
		if err != nil {
			t.Errorf("a write to another project: %v", err)
		}
	case <-time.After(3 * time.Second):
		t.Error("a write to another project waited behind the stalled one")
	}
}
