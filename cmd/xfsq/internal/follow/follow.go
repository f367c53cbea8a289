// Package follow is events --follow: the journal's records printed as
// they are written, oldest first, a deletion's pending record held back a
// while for the record that settles it.
//
// It reads the journal only through the page function it is given (the
// library's Manager.Events): it never opens the store, never writes, and
// words no record itself (its caller gives the line).
package follow

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/xfsq/xfsq/sandbox"
)

// followInterval is how often events --follow asks the journal for news.
const followInterval = time.Second

// pendingHold is how long --follow keeps back a deletion's pending record,
// waiting for the record that settles it, before printing it as pending.
const pendingHold = 5 * time.Second

// Output is where and how follow prints.
type Output struct {
	W    io.Writer
	JSON bool                       // one object a line, nothing held back
	Line func(sandbox.Event) string // a record as a person reads it
}

// Pages reads one page of the journal, newest first.
type Pages func(ctx context.Context, q sandbox.EventQuery) (sandbox.EventPage, error)

// Events prints evs (newest first) oldest first, then polls the
// journal's newest page for records past the last one printed, until ctx
// ends (Ctrl-C): a normal way to stop, so it exits 0.
func Events(ctx context.Context, out Output, pages Pages, q sandbox.EventQuery, evs []sandbox.Event) error {
	var last int64
	for _, ev := range evs {
		last = max(last, ev.ID)
	}
	held := map[string]heldEvent{}
	emit := func(batch []sandbox.Event) error { // batch newest first
		slices.Reverse(batch)
		for _, ev := range batch {
			if out.JSON {
				data, err := json.Marshal(ev)
				if err != nil {
					return err
				}
				fmt.Fprintln(out.W, string(data))
				continue
			}
			if k, pending, ok := sandbox.DeletionOf(ev); ok {
				if pending {
					held[k] = heldEvent{ev, time.Now()}
					continue
				}
				delete(held, k)
			}
			fmt.Fprintln(out.W, out.Line(ev))
		}
		if !out.JSON {
			for k, h := range held {
				if time.Since(h.since) >= pendingHold {
					fmt.Fprintln(out.W, out.Line(h.ev))
					delete(held, k)
				}
			}
		}
		return nil
	}
	if !out.JSON {
		// The first batch shows each deletion once already.
		evs = sandbox.SettledDeletions(evs)
	}
	if err := emit(evs); err != nil {
		return err
	}
	tick := time.NewTicker(followInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		fresh, err := newEvents(ctx, pages, q, last)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		for _, ev := range fresh {
			last = max(last, ev.ID)
		}
		if err := emit(fresh); err != nil {
			return err
		}
	}
}

type heldEvent struct {
	ev    sandbox.Event
	since time.Time
}

// newEvents is every record after the one with ID last, newest first,
// following the journal's cursor back page by page until it reaches it.
func newEvents(ctx context.Context, pages Pages, q sandbox.EventQuery, last int64) ([]sandbox.Event, error) {
	q.Cursor, q.Limit = "", 100 // a page: most polls find none
	var out []sandbox.Event
	for {
		page, err := pages(ctx, q)
		if err != nil {
			return nil, err
		}
		for _, ev := range page.Events {
			if ev.ID <= last {
				return out, nil
			}
			out = append(out, ev)
		}
		if page.Next == "" {
			return out, nil
		}
		q.Cursor = page.Next
	}
}
