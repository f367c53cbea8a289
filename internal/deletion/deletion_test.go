package deletion

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/xfsq/xfsq/internal/saferm"
)

// A journalled deletion whose way to the entry the tenant took away or
// turned into a link or a file settles as done (nothing there) or partial
// (the entry left, changed), never as failed: failed pages an operator.
// What cannot be reached for another reason still fails.
func TestDeleteSettlesACollisionAsLeftNotFailed(t *testing.T) {
	cases := []struct {
		name    string
		setup   func(t *testing.T, tree string)
		state   string
		left    bool
		wantErr bool
	}{
		{"the directory on the way went", func(t *testing.T, tree string) {}, StateDone, false, false},
		{"the directory on the way is a link", func(t *testing.T, tree string) {
			os.Symlink(t.TempDir(), filepath.Join(tree, "d"))
		}, StatePartial, true, false},
		{"the directory on the way is a file", func(t *testing.T, tree string) {
			os.WriteFile(filepath.Join(tree, "d"), nil, 0o644)
		}, StatePartial, true, false},
		{"the entry is there", func(t *testing.T, tree string) {
			os.Mkdir(filepath.Join(tree, "d"), 0o755)
			os.WriteFile(filepath.Join(tree, "d/f"), []byte("x"), 0o644)
		}, StateDone, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tree := t.TempDir()
			c.setup(t, tree)
			d, err := saferm.Open(tree)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			var states []string
			journal := func(_ context.Context, _ string, r Record) error {
				states = append(states, r.State)
				return nil
			}
			rec, rep, err := Delete(context.Background(), journal, "omni", d, "d/f", Record{}, saferm.Options{})
			if (err != nil) != c.wantErr || rec.State != c.state || (len(rep.Left) > 0) != c.left {
				t.Errorf("settled %s with left %v, error %v; want %s, left %v", rec.State, rep.Left, err, c.state, c.left)
			}
			if len(states) != 2 || states[0] != StatePending || states[1] != c.state {
				t.Errorf("journalled %v, want pending then %s", states, c.state)
			}
		})
	}
	t.Run("a path that is the directory itself still fails", func(t *testing.T) {
		d, err := saferm.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		rec, _, err := Delete(context.Background(), func(context.Context, string, Record) error { return nil }, "omni", d, ".", Record{}, saferm.Options{})
		if err == nil || rec.State != StateFailed {
			t.Errorf("removing the directory itself: %s, %v; want failed", rec.State, err)
		}
	})
}

// A removal its caller stops (a client hanging up, a shutdown) settles as
// partial, with what it did not reach named as left, never as failed: a
// tenant makes its tree as large as it likes, and any caller with a
// timeout must not page the operator. The error still says it stopped.
func TestACancelledDeletionIsPartialNotFailed(t *testing.T) {
	tree := t.TempDir()
	for i := range 2000 {
		os.MkdirAll(filepath.Join(tree, "big", fmt.Sprint(i%20)), 0o755)
		os.WriteFile(filepath.Join(tree, "big", fmt.Sprint(i%20), fmt.Sprint(i)), nil, 0o644)
	}
	d, err := saferm.Open(tree)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var states []Record
	journal := func(_ context.Context, _ string, r Record) error {
		states = append(states, r)
		return nil
	}
	cancel() // the request ended as the removal began
	rec, _, err := Delete(ctx, journal, "omni", d, "big", Record{}, saferm.Options{})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled removal: %v, want the cancellation", err)
	}
	if rec.State != StatePartial || len(rec.Left) == 0 || rec.Left[len(rec.Left)-1].Reason != LeftStopped {
		t.Errorf("settled %s with left %v; want partial, the rest left as stopped", rec.State, rec.Left)
	}
	if len(states) != 2 || states[1].State != StatePartial {
		t.Errorf("journalled %v", states)
	}
}

// A record journalled before docs/design/README.md#output-conventions's field names held its size as
// "bytes": it reads back as freed_bytes, and never over a freed_bytes the
// record has.
func TestARecordReadsBothForms(t *testing.T) {
	for in, want := range map[string]uint64{
		`{"path":"cache/a/x","state":"done","bytes":90}`:                  90,
		`{"path":"cache/a/x","state":"done","freed_bytes":80}`:            80,
		`{"path":"cache/a/x","state":"done","freed_bytes":80,"bytes":90}`: 80,
	} {
		var r Record
		if err := json.Unmarshal([]byte(in), &r); err != nil || r.Bytes != want || r.Path != "cache/a/x" || r.State != StateDone {
			t.Errorf("%s read as %+v, %v; want %d bytes", in, r, err, want)
		}
	}
}
