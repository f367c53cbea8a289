package files_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xfsq/xfsq/files"
	"github.com/xfsq/xfsq/internal/testsupport/mounttest"
	"github.com/xfsq/xfsq/sandbox"
)

// TestSameFilesystemBindMountsAreNeverDeletedThrough: a bind mount on the
// root's own filesystem keeps st_dev, so only the mount ID tells it from
// a directory. A tenant's container binds what it sees (here: a directory
// outside the root, and another project's workspace, standing for the
// shared inbound/ it has mounted) onto names of its own trees that a
// deletion reaches: a trash directory (dist/), a top-level cache entry, a
// scratch run, an inbound entry; everything is old enough to go. The
// sweep, rm -r of each name, and project rm --purge delete nothing through
// them. Held (attack4): saferm's mount ID look (sameMount), not st_dev.
func TestSameFilesystemBindMountsAreNeverDeletedThrough(t *testing.T) {
	s := newSandbox(t, filepath.Join(t.TempDir(), "db"), "a", "other")
	for k, v := range map[string]string{"busy_grace": "1s", "cache_min_age": "1s", "cache_quota_per_project": "1",
		"workspace_trash_age": "1s", "inbound_ttl": "1s", "scratch_ttl": "1s"} {
		if _, _, err := s.m.SetSetting(ctx, k, v); err != nil {
			t.Fatalf("%s=%s: %v", k, v, err)
		}
	}
	outside := filepath.Join(filepath.Dir(s.root), "outside-"+filepath.Base(s.root))
	other := filepath.Join(s.root, "projects/other/keep")
	old := time.Now().Add(-30 * 24 * time.Hour)
	want := map[string]string{}
	for _, d := range []string{outside, other} {
		for _, f := range []string{"f", "d/g", "dd/h"} {
			p := filepath.Join(d, f)
			os.MkdirAll(filepath.Dir(p), 0o755)
			os.WriteFile(p, []byte("KEEP "+p), 0o644)
			want[p] = "KEEP " + p
		}
	}
	binds := map[string]string{"projects/a/dist": outside, "cache/a/x": other, "scratch/a/run": outside, "inbound/in": other, "projects/a/d/dist": other}
	for at := range binds {
		os.MkdirAll(filepath.Join(s.root, at), 0o755)
	}
	filepath.Walk(filepath.Dir(s.root), func(p string, _ os.FileInfo, _ error) error { os.Chtimes(p, old, old); return nil })
	for at, src := range binds {
		mounttest.Bind(t, src, filepath.Join(s.root, at))
	}
	check := func(after string) {
		t.Helper()
		for p, data := range want {
			if b, err := os.ReadFile(p); err != nil || string(b) != data {
				t.Errorf("after %s: %s is %q, %v: deleted through a bind mount", after, p, b, err)
			}
		}
	}
	res, err := s.m.Sweep(ctx, sandbox.SweepOptions{})
	t.Logf("sweep: %v %+v", err, res.Result)
	check("the sweep")
	for _, c := range []struct{ area, p string }{{"", "dist"}, {"", "d"}, {"cache", "x"}, {"scratch", "run"}} {
		_, err := s.l.Remove(ctx, "a", c.area, c.p, files.RemoveOptions{Recursive: true})
		t.Logf("rm -r %s %s: %v", c.area, c.p, err)
		check("rm -r " + c.area + " " + c.p)
	}
	_, err = s.l.Remove(ctx, "_root", "inbound", "in", files.RemoveOptions{Recursive: true})
	t.Logf("rm -r inbound/in: %v", err)
	check("rm -r inbound/in")
	r, err := s.m.Remove(ctx, "a", sandbox.RemoveOptions{Purge: true, Force: true})
	t.Logf("purge: %v %+v", err, r)
	check("project rm --purge")
	if !strings.Contains(string(mustRead(t, "/proc/self/mountinfo")), filepath.Join(s.root, "cache/a/x")) {
		t.Error("the bind mount on cache/a/x is gone: a purge never removes a mount")
	}
}

func mustRead(t *testing.T, p string) []byte {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
