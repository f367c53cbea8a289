package core

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xfsq/xfsq/internal/testsupport/clihint"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/store"
)

// The library's messages say what is wrong in words every shell can show;
// what the operator should run, in the CLI's flags, travels as the hint
// beside the message (errkind.HintOf), which the CLI appends and a server
// puts in its own field. Each refusal keeps its kind.
func TestMessagesNameNoCLIFlagTheHintDoes(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	m, _ := managerWithOmni(t, root)

	if _, _, err := m.SetSetting(ctx, "scratch_ttl", "2d"); err != nil {
		t.Fatal(err)
	}
	blank, err := store.Open(ctx, filepath.Join(t.TempDir(), "blank.db"), "host-a")
	if err != nil {
		t.Fatal(err)
	}
	defer blank.Close()

	cases := []struct {
		name string
		err  func() error
		kind errkind.Kind
		says string // in the message
		hint string // in the hint
	}{
		{"set with no limit", func() error { _, err := m.Set(ctx, "omni", area.Workspace, LimitChange{}); return err },
			errkind.Input, "nothing to change", "--bytes-soft, --bytes-hard, --inodes-soft, --inodes-hard"},
		{"a blank store on a root with trees", func() error { return checkStoreKnowsRoot(ctx, root, blank) },
			errkind.NotReady, "has no record of this root", "point --db and --host at the store this root was initialised with"},
		{"a store on a full filesystem", func() error {
			return cannotWriteStore(&DiskFullError{Dir: root, Free: 0, Size: 1 << 30}, LocalDSN(root), "disk I/O error")
		}, errkind.NotReady, "xfsq cannot write its store", "on another filesystem (--db)"},
		{"a project's inbound tree", func() error { return ValidateTree("omni", area.Inbound) },
			errkind.Input, "has no inbound tree", "xfsq top _root --area inbound"},
		{"the root's owner with another area", func() error { return ValidateTree(RootOwner, area.Cache) },
			errkind.Input, "owns only the inbound tree", "--area inbound"},
		{"an add that failed and could not be rolled back", func() error {
			return rollbackFailed(errors.New("mkdir: permission denied"), errors.New("rmdir: busy"))
		}, errkind.Internal, "(and rolling back failed: rmdir: busy)", "xfsq doctor --fix"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.err()
			if err == nil {
				t.Fatal("no error")
			}
			msg, hint := err.Error(), errkind.HintIn(err, clihint.Words)
			if strings.Contains(msg, "--") {
				t.Errorf("message %q names a CLI flag; that belongs in the hint", msg)
			}
			if !strings.Contains(msg, c.says) {
				t.Errorf("message %q does not say %q", msg, c.says)
			}
			if !strings.Contains(hint, c.hint) {
				t.Errorf("hint %q does not say %q (message %q)", hint, c.hint, msg)
			}
			if k := errkind.Of(err); k != c.kind {
				t.Errorf("kind %v, want %v", k, c.kind)
			}
		})
	}
}

// A failed add keeps the kind of what failed beside its repair hint: a
// quota refusal stays a refusal.
func TestRollbackFailedKeepsTheKind(t *testing.T) {
	err := rollbackFailed(notFound("omni"), errors.New("rmdir: busy"))
	if errkind.Of(err) != errkind.NotFound || !errors.Is(err, ErrNotFound) {
		t.Errorf("%v: kind %v, want not found", err, errkind.Of(err))
	}
}
