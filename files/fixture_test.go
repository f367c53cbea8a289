package files_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/files"
	"github.com/xfsq/xfsq/internal/testsupport/fixture"
)

// TestLayerOnFixture drives the file layer over a root opened as every
// shell opens one, on each store driver: a write within the limit lands, one
// past it is refused as a quota denial (exit 3, HTTP 507), a bad path as bad
// input, and an empty directory lists as [] rather than null.
func TestLayerOnFixture(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		r.Add(1<<20, "omni")
		l, err := r.Files().ForWrites(r.Ctx)
		if err != nil {
			t.Fatal(err)
		}
		entries, err := l.List(r.Ctx, "omni", area.Workspace, "inbox")
		if err != nil || entries == nil || len(entries) != 0 {
			t.Fatalf("list of an empty directory: %v %#v", err, entries)
		}
		body := []byte("hello")
		if _, err := l.Put(r.Ctx, "omni", area.Workspace, "uploads/a.txt", bytes.NewReader(body), int64(len(body))); err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		if _, err := l.Get(r.Ctx, "omni", area.Workspace, "uploads/a.txt", &got); err != nil || got.String() != "hello" {
			t.Fatalf("get: %v %q", err, got.String())
		}
		big := strings.NewReader(strings.Repeat("x", 2<<20))
		_, err = l.Put(r.Ctx, "omni", area.Workspace, "big", big, 2<<20)
		if k := errkind.Of(err); k != errkind.Denied || k.ExitCode() != 3 || k.HTTPStatus() != 507 {
			t.Errorf("a write past the hard limit: %v (kind %s)", err, k)
		}
		_, err = l.Put(r.Ctx, "omni", area.Workspace, "../escape", strings.NewReader("x"), 1)
		if errkind.Of(err) != errkind.Input {
			t.Errorf("a path out of the tree: %v (kind %s)", err, errkind.Of(err))
		}
	})
}

// TestOpenAndRemoveOptions: Open gives a file open with its entry and a
// directory as an entry alone, a missing name is NotFound (404, not 500),
// and a removal with options takes a directory only when recursive.
func TestOpenAndRemoveOptions(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		r.Add(1<<20, "omni")
		l, err := r.Files().ForWrites(r.Ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Put(r.Ctx, "omni", "", "d/a.txt", strings.NewReader("hello"), 5); err != nil {
			t.Fatal(err)
		}
		f, e, err := l.Open(r.Ctx, "omni", "", "d/a.txt")
		if err != nil || f == nil || e.Type != "file" || e.Size != 5 || e.Ino == 0 || e.ModTime.IsZero() {
			t.Fatalf("open a file: %v %+v", err, e)
		}
		f.Close()
		if f, e, err := l.Open(r.Ctx, "omni", "", "d"); err != nil || f != nil || e.Type != "dir" {
			t.Fatalf("open a directory: %v %v %+v", err, f, e)
		}
		if _, _, err := l.Open(r.Ctx, "omni", "", "nope"); errkind.Of(err) != errkind.NotFound {
			t.Errorf("open a missing name: %v (kind %s)", err, errkind.Of(err))
		}
		if _, err := l.Remove(r.Ctx, "omni", "", "d", files.RemoveOptions{}); errkind.Of(err) != errkind.Input {
			t.Errorf("remove a directory without recursive: %v", err)
		}
		if _, _, err := l.Open(r.Ctx, "omni", "", "d/a.txt"); err != nil {
			t.Errorf("the refused removal touched the directory: %v", err)
		}
		if res, err := l.Remove(r.Ctx, "omni", "", "d", files.RemoveOptions{Recursive: true}); err != nil || res.Entries != 2 {
			t.Errorf("remove a directory recursively: %v %+v", err, res)
		}
	})
}
