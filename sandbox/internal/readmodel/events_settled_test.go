package readmodel

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/xfsq/xfsq/journal"
)

func evictedEvent(t *testing.T, id int64, path, state string) Event {
	t.Helper()
	raw, err := json.Marshal(journal.Evicted{SweepID: "sw-1", Path: path, State: state})
	if err != nil {
		t.Fatal(err)
	}
	return Event{ID: id, Type: journal.TypeEvicted, Payload: raw}
}

// A listing shows a deletion once, with its final state: its pending
// record goes once the settling one is in the page; an unsettled one stays.
func TestSettledDeletionsShowsEachDeletionOnce(t *testing.T) {
	newestFirst := []Event{
		evictedEvent(t, 4, "cache/omni/a", journal.StateDone),
		evictedEvent(t, 3, "cache/omni/b", journal.StatePending),
		evictedEvent(t, 2, "cache/omni/a", journal.StatePending),
		{ID: 1, Type: journal.TypeProjectAdded, Payload: json.RawMessage(`{}`)},
	}
	var ids []int64
	for _, ev := range SettledDeletions(newestFirst) {
		ids = append(ids, ev.ID)
	}
	if want := []int64{4, 3, 1}; !slices.Equal(ids, want) {
		t.Fatalf("kept %v, want %v", ids, want)
	}
}
