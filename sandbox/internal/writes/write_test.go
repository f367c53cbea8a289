package writes

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/quota"
	"github.com/xfsq/xfsq/sandbox/internal/core"
	"github.com/xfsq/xfsq/sandbox/internal/coretest"
	"github.com/xfsq/xfsq/sandbox/internal/snapshots"
	"github.com/xfsq/xfsq/store"
)

// The write protocol on the fallback: a reservation counts against the
// tree at once, a commit moves it to the ledger, an undo takes the commit
// back, a release gives back what a write that did not finish held, and
// past the hard limit Reserve refuses.
func TestWriteAccounting(t *testing.T) {
	ctx := context.Background()
	m, st := coretest.Omni(t, t.TempDir())
	a := New(m, snapshots.New(m).Top)
	hard := uint64(1 << 20)
	if _, err := m.Set(ctx, "omni", area.Workspace, core.LimitChange{BytesHard: &hard}); err != nil {
		t.Fatal(err)
	}
	tr, err := m.Tree(ctx, "omni", area.Workspace)
	if err != nil {
		t.Fatal(err)
	}
	key := store.TreeKey{Project: "omni", Area: area.Workspace}
	used := func() quota.Usage {
		t.Helper()
		_, u, _, err := st.Account(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	base := used()
	limits := WriteLimits{TTL: time.Minute}
	var before uint64 // over base, left by the cases before
	for _, c := range []struct {
		name   string
		finish func(ctx context.Context, w *Write) error
		want   uint64 // bytes over base after
	}{
		{"released", func(ctx context.Context, w *Write) error { w.Release(ctx); return nil }, 0},
		{"committed", func(ctx context.Context, w *Write) error { return w.Commit(ctx, 8192, 0) }, 8192},
		{"committed then undone", func(ctx context.Context, w *Write) error {
			if err := w.Commit(ctx, 8192, 0); err != nil {
				return err
			}
			w.Undo(ctx, quota.Usage{})
			return nil
		}, 8192}, // the previous case's commit stays
	} {
		wctx, end := core.BeginOp(ctx)
		w := a.StartWrite(tr, "omni", limits, 1, 0, "projects/omni/.xfsq-tmp-test")
		if err := w.Reserve(wctx, 8192, 8192, 0); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := used(); got.Bytes != base.Bytes+before+8192 {
			t.Errorf("%s: reserved, the tree counts %d bytes, want %d", c.name, got.Bytes, base.Bytes+before+8192)
		}
		if err := c.finish(wctx, w); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		w.Release(wctx) // a no-op after commit
		end()
		if got := used(); got.Bytes != base.Bytes+c.want {
			t.Errorf("%s: the tree counts %d bytes, want %d", c.name, got.Bytes, base.Bytes+c.want)
		}
		before = c.want
	}
	w := a.StartWrite(tr, "omni", limits, 1, 0, "")
	var le *quota.LimitError
	if err := w.Reserve(ctx, hard, hard, 0); !errors.As(err, &le) {
		t.Errorf("a write past the hard limit: %v, want a limit error", err)
	}
}
