package core

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/xfsq/xfsq/internal/testsupport/clihint"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/sandbox/internal/core/diskfull"
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

	storeSetting(t, m, "scratch_ttl", "2d")
	blank, err := store.Open(ctx, filepath.Join(t.TempDir(), "blank.db"), "host-a")
	if err != nil {
		t.Fatal(err)
	}
	defer blank.Close()

	cases := []clihint.Case{
		{Name: "set with no limit", Err: func() error { _, err := m.Set(ctx, "omni", area.Workspace, LimitChange{}); return err },
			Kind: errkind.Input, Says: "nothing to change", Hint: "--bytes-soft, --bytes-hard, --inodes-soft, --inodes-hard"},
		{Name: "a blank store on a root with trees", Err: func() error { return checkStoreKnowsRoot(ctx, root, blank) },
			Kind: errkind.NotReady, Says: "has no record of this root", Hint: "point --db and --host at the store this root was initialised with"},
		{Name: "a store on a full filesystem", Err: func() error {
			return cannotWriteStore(&diskfull.Error{Dir: root, Free: 0, Size: 1 << 30}, LocalDSN(root), "disk I/O error")
		}, Kind: errkind.NotReady, Says: "xfsq cannot write its store", Hint: "on another filesystem (--db)"},
		{Name: "a project's inbound tree", Err: func() error { return ValidateTree("omni", area.Inbound) },
			Kind: errkind.Input, Says: "has no inbound tree", Hint: "xfsq top _root --area inbound"},
		{Name: "the root's owner with another area", Err: func() error { return ValidateTree(RootOwner, area.Cache) },
			Kind: errkind.Input, Says: "owns only the inbound tree", Hint: "--area inbound"},
	}
	clihint.Check(t, cases)
}
