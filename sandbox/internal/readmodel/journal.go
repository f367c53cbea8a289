package readmodel

import (
	"context"
	"math"
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
// (DeletionTotals, SweepTotals, WalkTotals and the last pass), without
// their payloads, from the host's journal checkpoint on; the records after
// them come one by one, as every later read's do. Set Buckets before the
// first read to have the durations counted in those buckets; without them
// the first read returns every record as a later one does.
type JournalCursor struct {
	Buckets store.JournalBuckets

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
	// DeletionTotals, SweepTotals and WalkTotals, on a cursor's first
	// read only, are what the records it caught up on in the database add
	// up to (by tree): those records are in none of Deletions, Sweeps and
	// Walks.
	DeletionTotals []store.DeletionTotal
	SweepTotals    store.Histogram
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
	if !c.begun && c.Buckets.Walks != nil {
		if err := m.catchUp(ctx, c, horizon, &news); err != nil {
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

// catchUp is a cursor's first read in the database: the totals from the
// host's checkpoint to horizon, or, when the database will not sum them (a
// payload it will not read as JSON, say), the checkpoint's alone, the
// records after it then read one by one; with neither, the cursor stays
// at the start. Once any record was returned, there is no catch-up: it
// would count it again.
func (m *Model) catchUp(ctx context.Context, c *JournalCursor, horizon time.Time, news *JournalNews) error {
	totals, err := m.Store.JournalTotals(ctx, horizon, c.Buckets)
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		var ok bool
		if totals, ok, err = m.Store.JournalCheckpoint(ctx, c.Buckets); err != nil || !ok {
			return ctx.Err()
		}
	}
	news.addTotals(totals)
	c.settled, c.begun = totals.UpTo, true
	return nil
}

// addTotals adds what a catch-up summed.
func (n *JournalNews) addTotals(t store.JournalTotals) {
	n.DeletionTotals, n.SweepTotals, n.WalkTotals = t.Deletions, t.Sweeps, t.Walks
	n.Unreadable += t.Unreadable
	if !t.LastPass.IsZero() {
		n.SnapshotPasses = append(n.SnapshotPasses, t.LastPass)
	}
}

// CheckpointJournal moves this host's journal checkpoint in buckets past
// its records older than journalSettleTime (Store.AdvanceJournalCheckpoint):
// it sums the records since the checkpoint (all of them, a step at a time,
// when there is none in those buckets) and writes each step in one small
// transaction; false when there was nothing new or another process moved
// the checkpoint first.
func (m *Model) CheckpointJournal(ctx context.Context, buckets store.JournalBuckets) (bool, error) {
	return m.Store.AdvanceJournalCheckpoint(ctx, m.Now().Add(-journalSettleTime), buckets)
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
