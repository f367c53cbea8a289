package readmodel

import (
	"context"
	"math"
	"strconv"
	"time"

	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/store"
)

// JournalCursor is where a follower of the journal stands (the zero value:
// at its start). Keep one per follower and pass it to every ReadJournal.
//
// Event IDs are handed out when a record is inserted, not when it commits:
// on PostgreSQL a record may become visible after one with a higher ID.
// So the cursor only moves past records older than journalSettleTime, and
// remembers the newer ones it has already returned by ID.
//
// A cursor's first read catches up in the database (Store.JournalTotals):
// what the records older than journalSettleTime add up to comes as totals
// (DeletionTotals, WalkTotals, the sweeps and the last pass), without
// their payloads; the records after them come one by one, as every later
// read's do. Set WalkBuckets before the first read to have the walks
// counted in those buckets (seconds, ascending, as Duration.Seconds()
// compares); without them the first read returns every record as a later
// one does.
type JournalCursor struct {
	WalkBuckets []float64

	settled int64          // every record up to this ID has been returned
	recent  map[int64]bool // records above settled already returned
	begun   bool           // the first read was made
}

// journalSettleTime bounds how long a record may stay uncommitted after
// it was inserted (its "at") and still be counted: a journal write is one
// short transaction.
const journalSettleTime = 5 * time.Minute

// JournalNews is what the journal gained since the cursor's last read.
type JournalNews struct {
	// Deletions are settled storage.evicted records (done, partial or
	// failed); pending ones are not news until they settle.
	Deletions []Deletion
	// Sweeps are the storage.swept records: one per sweep.
	Sweeps []SweepRun
	// Walks are the tree walks of scheduled snapshot passes that recorded
	// their duration.
	Walks []WalkRun
	// SnapshotPasses are when each scheduled snapshot pass ended.
	SnapshotPasses []time.Time
	// Unreadable counts records whose payload could not be decoded; they
	// are skipped, not retried.
	Unreadable int
	// DeletionTotals and WalkTotals, on a cursor's first read only, are
	// what the records it caught up on in the database add up to, by tree:
	// those records are in neither Deletions nor Walks.
	DeletionTotals []store.DeletionTotal
	WalkTotals     []store.WalkTotal
}

// Deletion is one settled deletion.
type Deletion struct {
	Project, Area string
	Bytes         uint64 // freed
	State         string // deletion.StateDone, StatePartial or StateFailed
	BySweep       bool   // part of a sweep (not a purge or files rm)
}

// SweepRun is one sweep.
type SweepRun struct {
	At       time.Time
	Duration time.Duration
}

// WalkRun is one walk of one tree in a snapshot pass.
type WalkRun struct {
	Project, Area string
	Duration      time.Duration
}

var journalFollowed = []journal.Type{journal.TypeEvicted, journal.TypeSwept, journal.TypeSnapshot}

// ReadJournal returns the deletions, sweeps and snapshot passes journalled
// on this host since c's last read, each once, and moves c on. It reads
// only records it has not settled (a range on the journal's primary key),
// never writes, and takes no lock.
func (m *Model) ReadJournal(ctx context.Context, c *JournalCursor) (JournalNews, error) {
	var news JournalNews
	if c.recent == nil {
		c.recent = map[int64]bool{}
	}
	horizon := m.Now().Add(-journalSettleTime)
	if !c.begun && c.WalkBuckets != nil {
		// A catch-up that fails (a payload the database will not read as
		// JSON, say) leaves the cursor at the start: the records are then
		// read one by one, as before there was a catch-up. Once any record
		// was returned, there is no catch-up: it would count it again.
		totals, err := m.Store.JournalTotals(ctx, horizon, c.WalkBuckets)
		switch {
		case err == nil:
			news.addTotals(totals)
			c.settled, c.begun = totals.UpTo, true
		case ctx.Err() != nil:
			return news, err
		}
	}
	after, settled, contiguous := c.settled, c.settled, true
	// settle moves the cursor past what news holds: also when a later page
	// fails, whose caller counts what came before (read again, it was
	// counted twice).
	settle := func() {
		for id := range c.recent {
			if id <= settled {
				delete(c.recent, id)
			}
		}
		c.settled = settled
	}
	const page = 1000
	for {
		events, err := m.Store.EventsAfter(ctx, after, journalFollowed, page)
		if err != nil {
			settle()
			return news, err
		}
		c.begun = true
		for _, e := range events {
			after = e.ID
			seen := c.recent[e.ID]
			if contiguous && e.At.Before(horizon) {
				settled = e.ID
				delete(c.recent, e.ID)
			} else {
				contiguous = false
				c.recent[e.ID] = true
			}
			if !seen {
				news.add(e)
			}
		}
		if len(events) < page {
			break
		}
	}
	settle()
	return news, nil
}

// addTotals adds what a catch-up summed; its sweeps are read from their
// durations' text as journal.Swept reads its JSON (duration_ms in the
// oldest form, when duration_seconds is absent or 0).
func (n *JournalNews) addTotals(t store.JournalTotals) {
	n.DeletionTotals, n.WalkTotals = t.Deletions, t.Walks
	for _, r := range t.Sweeps {
		secs, err := jsonNumber(r.DurationSeconds, func(s string) (float64, error) { return strconv.ParseFloat(s, 64) })
		if err != nil {
			n.Unreadable++
			continue
		}
		ms, err := jsonNumber(r.DurationMS, func(s string) (int64, error) { return strconv.ParseInt(s, 10, 64) })
		if err != nil {
			n.Unreadable++
			continue
		}
		if secs == 0 && r.DurationMS != "" && r.DurationMS != "null" {
			secs = float64(ms) / 1000
		}
		n.Sweeps = append(n.Sweeps, SweepRun{At: r.At, Duration: time.Duration(math.Round(secs * float64(time.Second)))})
	}
	if !t.LastPass.IsZero() {
		n.SnapshotPasses = append(n.SnapshotPasses, t.LastPass)
	}
}

// jsonNumber reads a JSON value's text as encoding/json reads it into a
// number: absent or null is zero.
func jsonNumber[T int64 | float64](text string, parse func(string) (T, error)) (T, error) {
	if text == "" || text == "null" {
		return 0, nil
	}
	return parse(text)
}

func (n *JournalNews) add(e journal.Event) {
	p, err := e.Decode()
	if err != nil {
		n.Unreadable++
		return
	}
	switch p := p.(type) {
	case journal.Evicted:
		if p.State == journal.StatePending {
			return
		}
		n.Deletions = append(n.Deletions, Deletion{Project: e.Project, Area: p.Area, Bytes: p.Bytes, State: p.State, BySweep: p.SweepID != ""})
	case journal.Swept:
		n.Sweeps = append(n.Sweeps, SweepRun{At: e.At, Duration: time.Duration(math.Round(p.DurationSeconds * float64(time.Second)))})
	case journal.Snapshot:
		n.SnapshotPasses = append(n.SnapshotPasses, e.At)
		for _, t := range p.Trees {
			if t.DurationSeconds != nil { // passes journalled before durations were
				n.Walks = append(n.Walks, WalkRun{Project: t.Project, Area: t.Area, Duration: time.Duration(*t.DurationSeconds * float64(time.Second))})
			}
		}
	}
}
