package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path"
	"time"

	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/quota"
	"github.com/xfsq/xfsq/store/internal/base"
	"github.com/xfsq/xfsq/store/internal/walks"
)

// TreeKey names one tree of this host.
type TreeKey = base.TreeKey

// Reservation holds bytes and inodes for a write in flight.
type Reservation struct {
	ID        int64     `db:"id" json:"id"`
	Project   string    `db:"project" json:"project"`
	Area      string    `db:"area" json:"area"`
	Bytes     uint64    `db:"bytes" json:"reserved_bytes"`
	Inodes    uint64    `db:"inodes" json:"reserved_inodes"`
	Holder    string    `db:"holder" json:"holder"`
	TempPath  string    `db:"temp_path" json:"temp_path"`
	ExpiresAt time.Time `db:"-" json:"expires_at"`
	Expires   int64     `db:"expires_at" json:"-"`
}

// AdmitState is what admission decides a demand from, read in the
// transaction that records it: a tree's limits, its usage (last walk +
// ledger + reservations), its grace timers, and the root's byte usage.
type AdmitState struct {
	Limits   quota.Limits
	Used     quota.Usage
	Reserved quota.Usage // of Used: what writes in progress hold
	RootUsed uint64
	// BytesSoftSince and InodesSoftSince are since when the tree has been
	// over each soft limit (GraceStarts); zero: no timer running.
	BytesSoftSince, InodesSoftSince time.Time
}

// AdmitFunc decides a demand from the state it is made in; it is
// quota/fallback.Admit with the request and the grace period bound.
type AdmitFunc func(AdmitState) error

// NameReserved sets, on err's refusal by one of the tree's limits, how much
// of the usage it names writes in progress hold (a's reservations, less
// own: the asking write's, when a is read outside its reservation), so that
// an operator comparing with du is not misled. It returns err.
func (a AdmitState) NameReserved(err error, own quota.Usage) error {
	var le *quota.LimitError
	if !errors.As(err, &le) {
		return err
	}
	switch le.Limit {
	case "bytes_hard", "bytes_soft":
		le.Reserved = min(a.Reserved.Bytes-min(a.Reserved.Bytes, own.Bytes), le.Used)
	case "inodes_hard", "inodes_soft":
		le.Reserved = min(a.Reserved.Inodes-min(a.Reserved.Inodes, own.Inodes), le.Used)
	}
	return err
}

// ErrReservationGone is returned when a reservation expired and was
// reclaimed before its writer finished.
var ErrReservationGone = errors.New("the write's reservation expired and was reclaimed; try again")

// admissionLock serialises admission on this host: the root budget spans
// every tree, so every reservation takes the same lock.
func (t *Tx) admissionLock(ctx context.Context) error { return t.AdmissionLock(ctx) }

// HolderGone reports whether the operation named by a reservation's holder
// (pid.start@host/op-N, as core.HolderOf names it), whose process holds
// the lease l (Found false: none), is known to be gone; nil takes every
// holder for alive, so only expiry reclaims.
type HolderGone func(holder string, l HolderLease) bool

// reclaim deletes the reservations that can never be committed — past
// their expiry, or held by a process that no longer runs — and returns
// them, so the caller can remove the temporary files they name. A dead
// holder's reservation goes at once: waiting out its TTL would refuse live
// writers room that nobody holds.
func (t *Tx) reclaim(ctx context.Context, now time.Time, gone HolderGone) ([]Reservation, error) {
	var all []Reservation
	if err := t.Sel(ctx, &all, `SELECT id, project, area, bytes, inodes, holder, temp_path, expires_at FROM reservations
		WHERE host = ?`, t.s.Host); err != nil {
		return nil, err
	}
	var dead []Reservation
	// One answer per holder: a process with many writes in flight is asked
	// about once, not once for each.
	isGone := map[string]bool{}
	for _, r := range all {
		g, asked := isGone[r.Holder]
		if !asked && gone != nil {
			// Another process's lease says which machine it runs on: a pid
			// means something only on that one (a container sharing the
			// hostname in a pid namespace of its own is another).
			var l HolderLease
			if ProcessOf(r.Holder) != t.s.Liveness().Process {
				var err error
				if l, err = t.HolderLease(ctx, r.Holder); err != nil {
					return nil, err
				}
			}
			g = gone(r.Holder, l)
			isGone[r.Holder] = g
		}
		if r.Expires < toMicros(now) || g {
			if _, err := t.Exec(ctx, `DELETE FROM reservations WHERE id = ?`, r.ID); err != nil {
				return nil, err
			}
			dead = append(dead, r)
		}
	}
	return dead, nil
}

type treeAccount struct {
	Limits       quota.Limits
	Used         quota.Usage
	Reserved     quota.Usage // of Used: what writes in progress hold
	SoftExceeded bool
	// The grace timers (zero: not running).
	BytesSoftSince, InodesSoftSince time.Time
}

// account reads one tree's limits and usage: last walk + ledger (its sum,
// kept on the tree's row) + reservations.
func (t *Tx) account(ctx context.Context, k TreeKey) (treeAccount, error) {
	var row struct {
		BytesSoft, BytesHard, InodesSoft, InodesHard int64
		Bytes, Inodes                                int64
		SoftExceeded                                 bool
		BytesSince, InodesSince                      int64
	}
	err := t.SQL.QueryRowxContext(ctx, t.SQL.Rebind(`SELECT bytes_soft, bytes_hard, inodes_soft, inodes_hard,
		walked_bytes + ledger_bytes, walked_inodes + ledger_inodes, soft_exceeded, bytes_soft_since, inodes_soft_since
		FROM trees WHERE host = ? AND project = ? AND area = ?`), t.s.Host, k.Project, k.Area).Scan(
		&row.BytesSoft, &row.BytesHard, &row.InodesSoft, &row.InodesHard, &row.Bytes, &row.Inodes, &row.SoftExceeded,
		&row.BytesSince, &row.InodesSince)
	if errors.Is(err, sql.ErrNoRows) {
		return treeAccount{}, fmt.Errorf("tree %s/%s: %w", k.Project, k.Area, ErrNotFound)
	}
	if err != nil {
		return treeAccount{}, err
	}
	var resBytes, resInodes int64
	if err := t.SQL.QueryRowxContext(ctx, t.SQL.Rebind(`SELECT COALESCE(SUM(bytes), 0), COALESCE(SUM(inodes), 0) FROM reservations
		WHERE host = ? AND project = ? AND area = ?`), t.s.Host, k.Project, k.Area).Scan(&resBytes, &resInodes); err != nil {
		return treeAccount{}, err
	}
	return treeAccount{
		Limits: quota.Limits{BytesSoft: uint64(row.BytesSoft), BytesHard: uint64(row.BytesHard),
			InodesSoft: uint64(row.InodesSoft), InodesHard: uint64(row.InodesHard)},
		Used:           quota.Usage{Bytes: base.NonNegative(row.Bytes + resBytes), Inodes: base.NonNegative(row.Inodes + resInodes)},
		Reserved:       quota.Usage{Bytes: base.NonNegative(resBytes), Inodes: base.NonNegative(resInodes)},
		SoftExceeded:   row.SoftExceeded,
		BytesSoftSince: fromMicros(row.BytesSince), InodesSoftSince: fromMicros(row.InodesSince),
	}, nil
}

// rootUsed is the byte usage of every tree of this host, as account counts
// it: a row per tree and the writes in flight, never the ledger's rows.
func (t *Tx) rootUsed(ctx context.Context) (uint64, error) {
	var trees, res int64
	q := func(query string, dst *int64) error {
		return t.SQL.QueryRowxContext(ctx, t.SQL.Rebind(query), t.s.Host).Scan(dst)
	}
	// Each tree at least 0, as account floors it: a tree under-counted
	// below nothing must not lower its neighbours' share of the budget.
	if err := q(`SELECT COALESCE(SUM(CASE WHEN walked_bytes + ledger_bytes > 0 THEN walked_bytes + ledger_bytes ELSE 0 END), 0)
		FROM trees WHERE host = ?`, &trees); err != nil {
		return 0, err
	}
	if err := q(`SELECT COALESCE(SUM(bytes), 0) FROM reservations WHERE host = ?`, &res); err != nil {
		return 0, err
	}
	return base.NonNegative(trees + res), nil
}

func (t *Tx) admit(ctx context.Context, k TreeKey, admit AdmitFunc) error {
	acct, err := t.account(ctx, k)
	if err != nil {
		return err
	}
	root, err := t.rootUsed(ctx)
	if err != nil {
		return err
	}
	a := acct.admitState(root)
	return a.NameReserved(admit(a), quota.Usage{})
}

// Reserve admits a write and records its reservation, atomically with
// respect to every other writer on this host, in any process. It returns
// the reservations it reclaimed on the way (expired, or their holder gone).
func (s *Store) Reserve(ctx context.Context, k TreeKey, bytes, inodes uint64, holder, tempPath string, ttl time.Duration, gone HolderGone, admit AdmitFunc) (id int64, reclaimed []Reservation, err error) {
	err = s.InTx(ctx, func(tx *Tx) error {
		if err := tx.admissionLock(ctx); err != nil {
			return err
		}
		now := time.Now()
		if reclaimed, err = tx.reclaim(ctx, now, gone); err != nil {
			return err
		}
		if err := tx.admit(ctx, k, admit); err != nil {
			return err
		}
		// Its process's lease, so that another machine (or container) can
		// tell whether the writer still runs.
		if err := tx.Hold(ctx, holder); err != nil {
			return err
		}
		args := []any{s.Host, k.Project, k.Area, int64(bytes), int64(inodes), holder, tempPath, toMicros(now.Add(ttl)), toMicros(now)}
		const insert = `INSERT INTO reservations (host, project, area, bytes, inodes, holder, temp_path, expires_at, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`
		if s.Postgres {
			return tx.Get(ctx, &id, insert+` RETURNING id`, args...)
		}
		res, err := tx.Exec(ctx, insert, args...)
		if err != nil {
			return err
		}
		id, err = res.LastInsertId()
		return err
	})
	return id, reclaimed, err
}

// Grow adds to a live reservation after admitting the addition, and
// extends its expiry: a streaming writer calls it as data arrives. Like
// Reserve, it first reclaims what can never be committed, and returns it.
func (s *Store) Grow(ctx context.Context, k TreeKey, id int64, bytes uint64, ttl time.Duration, gone HolderGone, admit AdmitFunc) (reclaimed []Reservation, err error) {
	err = s.InTx(ctx, func(tx *Tx) error {
		if err := tx.admissionLock(ctx); err != nil {
			return err
		}
		if err := tx.liveReservation(ctx, id); err != nil {
			return err
		}
		if reclaimed, err = tx.reclaim(ctx, time.Now(), gone); err != nil {
			return err
		}
		if err := tx.admit(ctx, k, admit); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE reservations SET bytes = bytes + ?, expires_at = ? WHERE id = ?`,
			int64(bytes), toMicros(time.Now().Add(ttl)), id)
		return err
	})
	return reclaimed, err
}

// Renew extends a live reservation's expiry: a writer making progress
// calls it, so that only a write that stalls for ttl is reclaimed, however
// long the whole body takes.
func (s *Store) Renew(ctx context.Context, id int64, ttl time.Duration) error {
	return s.InTx(ctx, func(tx *Tx) error {
		now := time.Now()
		res, err := tx.Exec(ctx, `UPDATE reservations SET expires_at = ? WHERE id = ? AND expires_at >= ?`,
			toMicros(now.Add(ttl)), id, toMicros(now))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return ErrReservationGone
		}
		return nil
	})
}

func (t *Tx) liveReservation(ctx context.Context, id int64) error {
	var n int
	if err := t.Get(ctx, &n, `SELECT COUNT(*) FROM reservations WHERE id = ? AND expires_at >= ?`, id, toMicros(time.Now())); err != nil {
		return err
	}
	if n == 0 {
		return ErrReservationGone
	}
	return nil
}

// linkingExpiry is how long an emptied reservation outlives its commit
// unless released: linking a file takes milliseconds.
const linkingExpiry = time.Minute

// CommitFile turns a reservation into committed usage: the write's actual
// change is recorded in the ledger, and the reservation is emptied, not
// deleted. The ledger row is stamped now, before the writer links its file
// into place; until the writer has (Placed), the empty reservation tells
// a walk beginning meanwhile (BeginWalk) that a row may be in the ledger
// whose file it cannot see yet, so that its baseline does not drop that
// row. The first commit that takes a tree over its soft limit journals
// storage.quota_exceeded; dropping back under re-arms it.
//
// ino, when not 0, is the one file the row counts whole (bytes its
// blocks, inodes 1): an overwrite of that file later credits what this
// row counted (Placed).
func (s *Store) CommitFile(ctx context.Context, k TreeKey, id int64, bytes, inodes int64, ino uint64, actor string) error {
	return s.CommitWrite(ctx, k, id, bytes, 0, inodes, ino, actor)
}

// CommitWrite is CommitFile of a write whose row counts estimate bytes
// more, for what its names may grow their directories by, which Placed
// settles (Grown). Until then the estimate is held as a reservation is:
// it counts in admission, not in the soft limit's timer and event.
func (s *Store) CommitWrite(ctx context.Context, k TreeKey, id int64, bytes int64, estimate uint64, inodes int64, ino uint64, actor string) error {
	return s.InTx(ctx, func(tx *Tx) error {
		if err := tx.admissionLock(ctx); err != nil {
			return err
		}
		if err := tx.liveReservation(ctx, id); err != nil {
			return err
		}
		// No temporary file either: it becomes the file itself, which a
		// reclaim of this reservation must never remove. And a fresh
		// expiry: a TTL that ran out between this commit and the link
		// would let another writer reclaim the mark while it is needed;
		// a writer that died here leaves it a minute at most.
		if _, err := tx.Exec(ctx, `UPDATE reservations SET bytes = 0, inodes = 0, temp_path = '', expires_at = ? WHERE id = ?`,
			toMicros(time.Now().Add(linkingExpiry)), id); err != nil {
			return err
		}
		if err := tx.insertLedger(ctx, k, bytes+int64(estimate), inodes, ino, time.Now()); err != nil {
			return err
		}
		return tx.ledgerChanged(ctx, k, actor, estimate)
	})
}

// Uncommit takes back a CommitFile whose file never took its name: its
// bytes and inodes come off, and its row no longer counts inode ino (which
// goes with the unplaced file, and which another file may take next).
func (s *Store) Uncommit(ctx context.Context, k TreeKey, bytes, inodes int64, ino uint64, actor string) error {
	return s.InTx(ctx, func(tx *Tx) error {
		if err := tx.admissionLock(ctx); err != nil {
			return err
		}
		if ino != 0 {
			if _, err := tx.Exec(ctx, `UPDATE ledger SET ino = 0 WHERE host = ? AND project = ? AND area = ? AND ino = ?`,
				tx.s.Host, k.Project, k.Area, int64(ino)); err != nil {
				return err
			}
		}
		return tx.addLedger(ctx, k, -bytes, -inodes, 0, actor, time.Now())
	})
}

// AddLedger records a change made through xfsq outside a reservation: a
// deletion, or the undoing of a commit whose rename failed. since is when
// the change began (a removal's start): a credit for a change that began
// before the tree's last walk ended is dropped, as the walk may already
// have seen it gone — the ledger over-counts, never under-counts.
func (s *Store) AddLedger(ctx context.Context, k TreeKey, bytes, inodes int64, actor string, since time.Time) error {
	return s.InTx(ctx, func(tx *Tx) error {
		if err := tx.admissionLock(ctx); err != nil {
			return err
		}
		return tx.addLedger(ctx, k, bytes, inodes, 0, actor, since)
	})
}

func (t *Tx) addLedger(ctx context.Context, k TreeKey, bytes, inodes int64, ino uint64, actor string, since time.Time) error {
	if bytes < 0 || inodes < 0 {
		var walkedEnd int64
		if err := t.SQL.QueryRowxContext(ctx, t.SQL.Rebind(`SELECT walked_end FROM trees WHERE host = ? AND project = ? AND area = ?`),
			t.s.Host, k.Project, k.Area).Scan(&walkedEnd); err == nil && toMicros(since) <= walkedEnd {
			return nil
		}
	}
	if err := t.insertLedger(ctx, k, bytes, inodes, ino, since); err != nil {
		return err
	}
	return t.ledgerChanged(ctx, k, actor, 0)
}

// insertLedger records a row of the ledger and adds it to the tree's sum.
func (t *Tx) insertLedger(ctx context.Context, k TreeKey, bytes, inodes int64, ino uint64, since time.Time) error {
	if _, err := t.Exec(ctx, `INSERT INTO ledger (host, project, area, bytes, inodes, at, ino) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		t.s.Host, k.Project, k.Area, bytes, inodes, toMicros(since), int64(ino)); err != nil {
		return err
	}
	_, err := t.Exec(ctx, `UPDATE trees SET ledger_bytes = ledger_bytes + ?, ledger_inodes = ledger_inodes + ? WHERE host = ? AND project = ? AND area = ?`,
		bytes, inodes, t.s.Host, k.Project, k.Area)
	return err
}

// ledgerChanged starts or stops the tree's grace timers and records a
// crossing of any of its limits (RecordCrossings), from its usage less
// pending: bytes of the ledger that are an estimate not settled yet
// (CommitWrite), and less the reservations of writes in flight.
func (t *Tx) ledgerChanged(ctx context.Context, k TreeKey, actor string, pending uint64) error {
	acct, err := t.account(ctx, k)
	if err != nil {
		return err
	}
	acct.Used.Bytes -= min(acct.Used.Bytes, pending)
	if err := t.startGrace(ctx, k, acct); err != nil {
		return err
	}
	used := acct.committed()
	var bytesGrace, inodesGrace time.Time
	if grace, ok := ctx.Value(walks.GraceKey{}).(time.Duration); ok {
		now := time.Now()
		// The timers as startGrace just left them: running since before, or from now.
		bytesGrace = graceEnd(acct.BytesSoftSince, now, grace)
		inodesGrace = graceEnd(acct.InodesSoftSince, now, grace)
	}
	over, err := t.OverLimits(ctx, k)
	if err != nil {
		return err
	}
	for _, c := range LimitsCrossings(k, acct.Limits, used, 0, bytesGrace, inodesGrace, journal.SeenByAdmission) {
		if c.Over == over[c.Limit] {
			continue // as recorded: the common case costs the one read above
		}
		if _, err := t.RecordCrossing(ctx, actor, c); err != nil {
			return err
		}
	}
	return nil
}

// graceEnd is when a grace timer started at since (zero: starting now)
// runs out.
func graceEnd(since, now time.Time, grace time.Duration) time.Time {
	if since.IsZero() {
		since = now
	}
	return since.Add(grace)
}

// Release drops a reservation whose write was refused or failed.
func (s *Store) Release(ctx context.Context, id int64) error {
	return s.InTx(ctx, func(tx *Tx) error {
		_, err := tx.Exec(ctx, `DELETE FROM reservations WHERE id = ?`, id)
		return err
	})
}

// Replaced is what an overwrite's rename unlinked, to be credited only as
// far as the tree's usage counted it: a tenant can grow a file written
// through xfsq, or write one itself, outside xfsq, and a credit of bytes
// nothing counted would take the usage below the disk's.
type Replaced struct {
	// Counted is credited as it is: the last walk counted the file (it
	// was unchanged since before the walk began).
	Counted quota.Usage
	// Otherwise Ino, with Bytes its blocks when unlinked: credited the
	// least of Bytes and what a kept ledger row counting that inode whole
	// (CommitFile) counted, and one inode; the row then counts no inode
	// any more, so that no other file taking the number is credited again.
	Ino   uint64
	Bytes uint64
}

// Grown settles what a commit counted for the growth of the directories
// its names went into (an estimate: only the link measures it) at what
// was measured. More is charged as of now: a walk that drops the charge
// began after the link, and saw the growth. Less is credited as of
// Committed, when the commit began: a walk that may have dropped the
// commit's row ended after that, and drops the credit too (addLedger), so
// a credit never outlives the estimate it corrects.
type Grown struct {
	Estimated, Measured uint64
	Committed           time.Time
}

// settle records g in the ledger.
func (t *Tx) settle(ctx context.Context, k TreeKey, g Grown, actor string) error {
	var err error
	switch {
	case g.Measured > g.Estimated:
		err = t.addLedger(ctx, k, int64(g.Measured-g.Estimated), 0, 0, actor, time.Now())
	case g.Measured < g.Estimated:
		err = t.addLedger(ctx, k, -int64(g.Estimated-g.Measured), 0, 0, actor, g.Committed)
	}
	if err != nil || g == (Grown{Committed: g.Committed}) {
		return err
	}
	// Settled (or the credit dropped, the estimate kept): the soft limit
	// counts what the ledger now holds.
	return t.ledgerChanged(ctx, k, actor, 0)
}

// Placed ends a committed write whose file is now in place: its emptied
// reservation goes, what its directories grew by is settled (Grown), and
// what the write's rename replaced and unlinked is credited to the ledger
// as of since (Replaced), in one transaction.
func (s *Store) Placed(ctx context.Context, k TreeKey, id int64, r Replaced, grown Grown, actor string, since time.Time) error {
	return s.InTx(ctx, func(tx *Tx) error {
		if err := tx.admissionLock(ctx); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM reservations WHERE id = ?`, id); err != nil {
			return err
		}
		if err := tx.settle(ctx, k, grown, actor); err != nil {
			return err
		}
		freed := r.Counted
		if freed == (quota.Usage{}) && r.Ino != 0 {
			var err error
			if freed, err = tx.consumeInodeRow(ctx, k, r.Ino, r.Bytes); err != nil {
				return err
			}
		}
		if freed.Bytes == 0 && freed.Inodes == 0 {
			return nil
		}
		return tx.addLedger(ctx, k, -int64(freed.Bytes), -int64(freed.Inodes), 0, actor, since)
	})
}

// consumeInodeRow is what a kept ledger row counting the inode ino whole
// (CommitFile) lets a removal of it credit: the least of bytes (its blocks
// when unlinked) and what the row counted, and one inode; nothing without
// such a row. The row then counts no inode any more, so that no other file
// taking the number is credited again.
func (t *Tx) consumeInodeRow(ctx context.Context, k TreeKey, ino, bytes uint64) (quota.Usage, error) {
	var row struct {
		ID    int64 `db:"id"`
		Bytes int64 `db:"bytes"`
	}
	err := t.Get(ctx, &row, `SELECT id, bytes FROM ledger WHERE host = ? AND project = ? AND area = ? AND ino = ? AND bytes > 0
		ORDER BY id DESC LIMIT 1`, t.s.Host, k.Project, k.Area, int64(ino))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return quota.Usage{}, nil
	case err != nil:
		return quota.Usage{}, err
	}
	if _, err := t.Exec(ctx, `UPDATE ledger SET ino = 0 WHERE id = ?`, row.ID); err != nil {
		return quota.Usage{}, err
	}
	return quota.Usage{Bytes: min(bytes, uint64(row.Bytes)), Inodes: 1}, nil
}

// Removed credits a removal from k (as of since, when it began): counted
// as it is (what the last walk counted of what went), and of each freed
// inode the walk did not count, what a kept ledger row of its own write
// through xfsq counted (consumeInodeRow), in one transaction. As every
// credit, it is dropped if a walk that ended after since may have seen the
// removal (addLedger).
func (s *Store) Removed(ctx context.Context, k TreeKey, counted quota.Usage, uncounted []Freed, actor string, since time.Time) error {
	return s.InTx(ctx, func(tx *Tx) error {
		if err := tx.admissionLock(ctx); err != nil {
			return err
		}
		credited := counted
		for _, f := range uncounted {
			u, err := tx.consumeInodeRow(ctx, k, f.Ino, f.Bytes)
			if err != nil {
				return err
			}
			credited.Bytes += u.Bytes
			credited.Inodes += u.Inodes
		}
		if credited.Bytes == 0 && credited.Inodes == 0 {
			return nil
		}
		return tx.addLedger(ctx, k, -int64(credited.Bytes), -int64(credited.Inodes), 0, actor, since)
	})
}

// Freed is an inode a removal freed that the last walk did not count: its
// number and its blocks when unlinked.
type Freed struct{ Ino, Bytes uint64 }

// Reclaim deletes and returns the reservations that can never be
// committed (expired, or gone(holder)), as every Reserve does first.
func (s *Store) Reclaim(ctx context.Context, gone HolderGone) (reclaimed []Reservation, err error) {
	err = s.InTx(ctx, func(tx *Tx) error {
		if err := tx.admissionLock(ctx); err != nil {
			return err
		}
		reclaimed, err = tx.reclaim(ctx, time.Now(), gone)
		return err
	})
	return reclaimed, err
}

// Reservations lists the live and expired reservations of this host.
func (s *Store) Reservations(ctx context.Context) ([]Reservation, error) {
	var out []Reservation
	err := s.Sel(ctx, &out, `SELECT id, project, area, bytes, inodes, holder, temp_path, expires_at FROM reservations WHERE host = ? ORDER BY id`, s.Host)
	for i := range out {
		out[i].ExpiresAt = fromMicros(out[i].Expires)
	}
	return out, err
}

// TempInode records the inode of the named temporary file of the write
// holding reservation id, so that walks leave out that file alone.
func (s *Store) TempInode(ctx context.Context, id int64, ino uint64) error {
	ctx, done, err := s.Bounded(ctx)
	if err != nil {
		return err
	}
	_, err = s.SQL.ExecContext(ctx, s.SQL.Rebind(`UPDATE reservations SET temp_ino = ? WHERE id = ?`), int64(ino), id)
	return done(err)
}

// BeginWalk is the Walk of a walk of k beginning at at: call it after
// reading at and before the walk reads the tree. It reads the tree's
// emptied reservations (committed, not linked yet: Commit) under the
// admission lock, so that no commit is half done meanwhile: a commit
// stamps its ledger row inside its transaction, before it is visible. So
// a write whose row is stamped by at was committed before the read; if its
// reservation is gone then, its file was in place before the walk began,
// and if not, Settled is before the reservation was made, so before the
// row. A write not committed by the read stamps its row after it, so after
// at: kept whatever Settled is. Uploads still streaming therefore do not
// lower Settled (which would keep the rows of every write beside a slow
// upload, counted twice, and let a tenant's double count take a
// neighbour's share of the root budget).
func (s *Store) BeginWalk(ctx context.Context, k TreeKey, at time.Time) (Walk, error) {
	w := WalkAt(at)
	var earliest sql.NullInt64
	err := s.InTx(ctx, func(tx *Tx) error {
		if err := tx.admissionLock(ctx); err != nil {
			return err
		}
		if err := tx.Get(ctx, &earliest, `SELECT MIN(created_at) FROM reservations WHERE host = ? AND project = ? AND area = ?
			AND bytes = 0 AND inodes = 0 AND temp_path = ''`, s.Host, k.Project, k.Area); err != nil {
			return err
		}
		var writing []struct {
			TempPath string `db:"temp_path"`
			Bytes    int64  `db:"bytes"`
			Ino      int64  `db:"temp_ino"`
		}
		if err := tx.Sel(ctx, &writing, `SELECT temp_path, bytes, temp_ino FROM reservations WHERE host = ? AND project = ? AND area = ?
			AND temp_path <> '' AND bytes > 0 AND temp_ino <> 0`, s.Host, k.Project, k.Area); err != nil {
			return err
		}
		for _, r := range writing {
			if w.Writing == nil {
				w.Writing = map[string]InProgress{}
			}
			w.Writing[path.Base(r.TempPath)] = InProgress{Ino: uint64(r.Ino), Room: uint64(r.Bytes)}
		}
		return nil
	})
	if err != nil {
		return Walk{}, err
	}
	if earliest.Valid {
		if t := fromMicros(earliest.Int64 - 1); t.Before(w.Settled) {
			w.Settled = t
		}
	}
	return w, nil
}

// SetBaseline records a walk of a tree: the ledger entries it already saw
// are dropped (up to w.Settled). Writes that landed during the walk may be
// counted twice until the next walk — an over-count, never an under-count.
func (s *Store) SetBaseline(ctx context.Context, k TreeKey, u quota.Usage, w Walk, seen WalkSeen) error {
	return s.InTx(ctx, func(tx *Tx) error { return tx.SetBaseline(ctx, k, u, w, seen) })
}

// SetBaseline is Store.SetBaseline inside the caller's transaction.
func (t *Tx) SetBaseline(ctx context.Context, k TreeKey, u quota.Usage, w Walk, seen WalkSeen) error {
	if err := t.admissionLock(ctx); err != nil {
		return err
	}
	if seen.Unsettled || seen.Hidden {
		acct, err := t.account(ctx, k)
		if err != nil {
			return err
		}
		var resBytes, resInodes int64
		if err := t.SQL.QueryRowxContext(ctx, t.SQL.Rebind(`SELECT COALESCE(SUM(bytes), 0), COALESCE(SUM(inodes), 0) FROM reservations
			WHERE host = ? AND project = ? AND area = ?`), t.s.Host, k.Project, k.Area).Scan(&resBytes, &resInodes); err != nil {
			return err
		}
		u.Bytes = max(u.Bytes, acct.Used.Bytes-min(acct.Used.Bytes, uint64(resBytes)))
		u.Inodes = max(u.Inodes, acct.Used.Inodes-min(acct.Used.Inodes, uint64(resInodes)))
	}
	// The walk ran from w.At to now. A write whose file was in place
	// before it started is in its figure (its ledger row up to w.Settled);
	// one committed during it, or committed before but linked after the
	// walk began, may not be (kept: at worst counted twice). A removal or
	// shrink that began before it ended may be in its figure too: dropped,
	// as subtracting it twice would under-count.
	end := toMicros(time.Now())
	if _, err := t.Exec(ctx, `UPDATE trees SET walked_bytes = ?, walked_inodes = ?, walked_at = ?, walked_end = ?, walked_hidden = ? WHERE host = ? AND project = ? AND area = ?`,
		int64(u.Bytes), int64(u.Inodes), toMicros(w.At), end, seen.Hidden, t.s.Host, k.Project, k.Area); err != nil {
		return err
	}
	settled := toMicros(w.Settled)
	if w.Settled.After(w.At) {
		settled = toMicros(w.At)
	}
	if _, err := t.Exec(ctx, `DELETE FROM ledger WHERE host = ? AND project = ? AND area = ? AND (at <= ? OR ((bytes < 0 OR inodes < 0) AND at <= ?))`,
		t.s.Host, k.Project, k.Area, settled, end); err != nil {
		return err
	}
	// The sum anew from the rows kept: those the walk may not have seen,
	// which a walk's length bounds (rather than subtracting the dropped
	// rows, which would cost a second pass over what may be millions).
	if _, err := t.Exec(ctx, `UPDATE trees SET
		ledger_bytes = COALESCE((SELECT SUM(l.bytes) FROM ledger l WHERE l.host = trees.host AND l.project = trees.project AND l.area = trees.area), 0),
		ledger_inodes = COALESCE((SELECT SUM(l.inodes) FROM ledger l WHERE l.host = trees.host AND l.project = trees.project AND l.area = trees.area), 0)
		WHERE host = ? AND project = ? AND area = ?`, t.s.Host, k.Project, k.Area); err != nil {
		return err
	}
	acct, err := t.account(ctx, k)
	if err != nil {
		return err
	}
	return t.startGrace(ctx, k, acct)
}

// startGrace starts a tree's grace timers when its usage is over a soft
// limit and they are not running, and stops them when it is back under,
// as the kernel does on XFS at each allocation: the fallback sees usage
// change at xfsq's writes, at walks and at limit changes.
func (t *Tx) startGrace(ctx context.Context, k TreeKey, acct treeAccount) error {
	now := toMicros(time.Now())
	since := func(soft, used uint64) int64 {
		if soft > 0 && used > soft {
			return now
		}
		return 0
	}
	used := acct.committed()
	// A running timer keeps its start (CASE), a tree back under stops it.
	_, err := t.Exec(ctx, `UPDATE trees SET
		bytes_soft_since = CASE WHEN CAST(? AS BIGINT) = 0 THEN 0 WHEN bytes_soft_since = 0 THEN CAST(? AS BIGINT) ELSE bytes_soft_since END,
		inodes_soft_since = CASE WHEN CAST(? AS BIGINT) = 0 THEN 0 WHEN inodes_soft_since = 0 THEN CAST(? AS BIGINT) ELSE inodes_soft_since END
		WHERE host = ? AND project = ? AND area = ?`,
		since(acct.Limits.BytesSoft, used.Bytes), since(acct.Limits.BytesSoft, used.Bytes),
		since(acct.Limits.InodesSoft, used.Inodes), since(acct.Limits.InodesSoft, used.Inodes),
		t.s.Host, k.Project, k.Area)
	return err
}

// GraceStarts reads since when a fallback tree has been over its soft
// byte and inode limits (zero: not over, or not seen over yet).
func (s *Store) GraceStarts(ctx context.Context, k TreeKey) (bytes, inodes time.Time, err error) {
	var row struct {
		Bytes  int64 `db:"bytes_soft_since"`
		Inodes int64 `db:"inodes_soft_since"`
	}
	err = s.Get(ctx, &row, `SELECT bytes_soft_since, inodes_soft_since FROM trees WHERE host = ? AND project = ? AND area = ?`, s.Host, k.Project, k.Area)
	if errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, time.Time{}, fmt.Errorf("tree %s/%s: %w", k.Project, k.Area, ErrNotFound)
	}
	return fromMicros(row.Bytes), fromMicros(row.Inodes), err
}

// Baseline is what a tree's last walk left for credits to go by.
type Baseline struct {
	At     time.Time // when the walk began; zero: never walked
	End    time.Time // when its figure was recorded
	Hidden bool      // mount points hid part of the tree from it (WalkSeen.Hidden)
}

// Baseline reads the tree's last walk.
func (s *Store) Baseline(ctx context.Context, k TreeKey) (Baseline, error) {
	var row struct {
		At     int64 `db:"walked_at"`
		End    int64 `db:"walked_end"`
		Hidden bool  `db:"walked_hidden"`
	}
	err := s.Get(ctx, &row, `SELECT walked_at, walked_end, walked_hidden FROM trees WHERE host = ? AND project = ? AND area = ?`, s.Host, k.Project, k.Area)
	if errors.Is(err, sql.ErrNoRows) {
		return Baseline{}, fmt.Errorf("tree %s/%s: %w", k.Project, k.Area, ErrNotFound)
	}
	return Baseline{At: fromMicros(row.At), End: fromMicros(row.End), Hidden: row.Hidden}, err
}

// TreeRead is one tree as admission sees it.
type TreeRead struct {
	Limits   quota.Limits
	Used     quota.Usage // last walk + ledger + reservations
	WalkedAt time.Time   // when the last walk began; zero: never walked
	// BytesSoftSince and InodesSoftSince are the grace timers (GraceStarts);
	// zero: not over that soft limit.
	BytesSoftSince, InodesSoftSince time.Time
}

// Read is one tree as admission sees it, read in one statement: its
// limits, its usage (last walk + ledger + reservations), when it was last
// walked and its grace timers. A check reads each tree this way and
// nothing else — not the root's total, which only a write needs — so that
// a check costs a few index lookups however many projects the root holds.
func (s *Store) Read(ctx context.Context, k TreeKey) (TreeRead, error) {
	var row struct {
		BytesSoft, BytesHard, InodesSoft, InodesHard int64
		Bytes, Inodes, WalkedAt                      int64
		BytesSince, InodesSince                      int64
	}
	ctx, done, err := s.Bounded(ctx)
	if err != nil {
		return TreeRead{}, err
	}
	st, err := s.Prepared(ctx, readQuery)
	if err != nil {
		return TreeRead{}, done(err)
	}
	err = done(st.QueryRowxContext(ctx, s.Host, k.Project, k.Area).Scan(
		&row.BytesSoft, &row.BytesHard, &row.InodesSoft, &row.InodesHard, &row.Bytes, &row.Inodes, &row.WalkedAt, &row.BytesSince, &row.InodesSince))
	if errors.Is(err, sql.ErrNoRows) {
		return TreeRead{}, fmt.Errorf("tree %s/%s: %w", k.Project, k.Area, ErrNotFound)
	}
	if err != nil {
		return TreeRead{}, err
	}
	return TreeRead{
		Limits:         quota.Limits{BytesSoft: uint64(row.BytesSoft), BytesHard: uint64(row.BytesHard), InodesSoft: uint64(row.InodesSoft), InodesHard: uint64(row.InodesHard)},
		Used:           quota.Usage{Bytes: base.NonNegative(row.Bytes), Inodes: base.NonNegative(row.Inodes)},
		WalkedAt:       fromMicros(row.WalkedAt),
		BytesSoftSince: fromMicros(row.BytesSince), InodesSoftSince: fromMicros(row.InodesSince),
	}, nil
}

// readQuery is Read's one statement, prepared once (Store.prepared).
const readQuery = `SELECT t.bytes_soft, t.bytes_hard, t.inodes_soft, t.inodes_hard,
	t.walked_bytes + t.ledger_bytes
		+ COALESCE((SELECT SUM(r.bytes) FROM reservations r WHERE r.host = t.host AND r.project = t.project AND r.area = t.area), 0),
	t.walked_inodes + t.ledger_inodes
		+ COALESCE((SELECT SUM(r.inodes) FROM reservations r WHERE r.host = t.host AND r.project = t.project AND r.area = t.area), 0),
	t.walked_at, t.bytes_soft_since, t.inodes_soft_since
	FROM trees t WHERE t.host = ? AND t.project = ? AND t.area = ?`

// committed is the tree's usage without the writes in progress: what is on
// disk as far as xfsq knows. Grace timers and the soft-limit event go by it,
// as XFS's timer goes by blocks allocated, never by a write that may yet
// be abandoned.
func (a treeAccount) committed() quota.Usage {
	return quota.Usage{Bytes: a.Used.Bytes - min(a.Reserved.Bytes, a.Used.Bytes), Inodes: a.Used.Inodes - min(a.Reserved.Inodes, a.Used.Inodes)}
}

func (a treeAccount) admitState(rootUsed uint64) AdmitState {
	return AdmitState{Limits: a.Limits, Used: a.Used, Reserved: a.Reserved, RootUsed: rootUsed,
		BytesSoftSince: a.BytesSoftSince, InodesSoftSince: a.InodesSoftSince}
}

// Account reads a tree's limits and usage (last walk + ledger +
// reservations) and the root's byte usage, as admission sees them.
func (s *Store) Account(ctx context.Context, k TreeKey) (quota.Limits, quota.Usage, uint64, error) {
	a, err := s.Admission(ctx, k)
	return a.Limits, a.Used, a.RootUsed, err
}

// Admission reads what a reservation of k would be decided from, outside
// one: for explaining a refusal.
func (s *Store) Admission(ctx context.Context, k TreeKey) (AdmitState, error) {
	var acct treeAccount
	var root uint64
	err := s.InTx(ctx, func(tx *Tx) error {
		var err error
		if acct, err = tx.account(ctx, k); err != nil {
			return err
		}
		root, err = tx.rootUsed(ctx)
		return err
	})
	return acct.admitState(root), err
}
