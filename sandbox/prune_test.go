package sandbox_test

import (
	"testing"

	"github.com/xfsq/xfsq/internal/testsupport/fixture"
	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/sandbox"
)

// The scheduled snapshot pass prunes the journal when journal_retention
// is set, and journals the run; by default (0) it keeps the whole journal
// and journals nothing of the kind. What a prune keeps is
// store.TestPruneKeepsPendingAndTheWindow's.
func TestSnapshotPassPrunesTheJournal(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		r.Add(1<<30, "omni")
		if _, err := r.Manager.RunPass(r.Ctx, sandbox.PassSnapshot); err != nil {
			t.Fatal(err)
		}
		if got := r.Events(journal.TypeJournalPruned); len(got) != 0 {
			t.Fatalf("journal_retention 0 pruned: %+v", got)
		}
		set(t, r, "journal_retention", "30d")
		if err := sandbox.TestStore(r.Manager).AbandonPass(r.Ctx, sandbox.PassSnapshot, ""); err != nil { // due again
			t.Fatal(err)
		}
		if out, err := r.Manager.RunPass(r.Ctx, sandbox.PassSnapshot); err != nil || !out.Ran {
			t.Fatalf("second pass: %+v %v", out, err)
		}
		got := r.Events(journal.TypeJournalPruned)
		if len(got) != 1 {
			t.Fatalf("journal.pruned after a pass with journal_retention 30d: %+v", got)
		}
		p, err := got[0].Decode()
		if err != nil || p.(journal.JournalPruned).Retention != "30d" {
			t.Errorf("journal.pruned %+v %v", p, err)
		}
	})
}
