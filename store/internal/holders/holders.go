package holders

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xfsq/xfsq/store/internal/base"
)

// Liveness across machines. Every record of work in progress (a sweep
// lock, a scheduled pass, an add or a removal, a pending deletion) names
// its holder, pid.start@hostname/op-N. Whether a holder on another machine
// still runs cannot be asked of this machine's kernel, so each process
// holds a lease in the store (the holders table): written in the same
// transaction as the first record naming one of its holders, renewed by a
// heartbeat while its Store is open, and expired by the database's clock,
// the one clock every host shares. A holder whose lease has expired is
// gone: its lock or pass is taken over, and the takeover journalled.

// Liveness configures the lease this Store holds for its process.
type Liveness struct {
	// Process is this process's name as its holders begin (pid.start@hostname).
	Process string
	// Machine names the kernel boot and pid namespace the process runs in:
	// a holder whose lease names the same machine may be asked of the kernel.
	Machine string
	// Heartbeat is how often the lease is renewed; Expiry how long it lasts
	// unrenewed. Zero: DefaultHeartbeat, DefaultExpiry.
	Heartbeat, Expiry time.Duration
}

// The defaults of the holder_heartbeat and holder_expiry settings.
const (
	DefaultHeartbeat = 30 * time.Second
	DefaultExpiry    = 2 * time.Minute
)

// reapAfter is how long an expired lease is kept before it is dropped: a
// holder without a lease is gone anyway, so this only bounds the table.
const reapAfter = 24 * time.Hour

// HolderLease is what the store knows of a holder's process.
type HolderLease struct {
	Process string
	// Found: the process holds (or held) a lease; false for a holder
	// written by a binary that predates leases, or long expired.
	Found     bool
	Machine   string
	Expired   bool // by the database's clock
	ExpiresAt time.Time
}

// Gone decides whether holder, whose process's lease is l, has stopped,
// and says why (journalled with a takeover).
type Gone func(holder string, l HolderLease) (gone bool, why string)

// Claim is who claims a lock or a pass: the operation's holder, the actor
// journalled with a takeover, and how to tell whether another holder is gone.
type Claim struct {
	Holder string
	Actor  string
	Gone   Gone
}

// ProcessOf is the process part of a holder (pid.start@hostname).
func ProcessOf(holder string) string {
	p, _, _ := strings.Cut(holder, "/")
	return p
}

// SetLiveness configures this Store's lease; call it before any holder is
// recorded. Without it the Store holds no lease (its holders are then
// gone, for another machine, as soon as they are written).
func (s *Store) SetLiveness(l Liveness) {
	if l.Heartbeat <= 0 {
		l.Heartbeat = DefaultHeartbeat
	}
	if l.Expiry <= 0 {
		l.Expiry = DefaultExpiry
	}
	s.beat.mu.Lock()
	defer s.beat.mu.Unlock()
	s.beat.live = l
}

func (s *Store) Liveness() Liveness {
	s.beat.mu.Lock()
	defer s.beat.mu.Unlock()
	return s.beat.live
}

// dbNow is the database's clock in Unix microseconds, as an SQL expression.
func (s *Store) dbNow() string {
	if s.Postgres {
		return `(EXTRACT(EPOCH FROM clock_timestamp()) * 1000000)::BIGINT`
	}
	return `CAST((julianday('now') - 2440587.5) * 86400000000.0 AS INTEGER)`
}

// Hold takes or renews this process's lease when holder is one of its
// own, in the transaction that records holder: no record names a holder
// whose lease another machine cannot read.
func (t *Tx) Hold(ctx context.Context, holder string) error {
	l := t.s.Liveness()
	if l.Process == "" || ProcessOf(holder) != l.Process {
		return nil
	}
	if t.s.beat.held() {
		return nil // the heartbeat keeps it: every write need not renew it
	}
	now := t.s.dbNow()
	if !t.s.beat.reaped.Load() {
		if _, err := t.Exec(ctx, `DELETE FROM holders WHERE expires_at < `+now+` - ?`, reapAfter.Microseconds()); err != nil {
			return err
		}
	}
	sent := time.Now()
	_, err := t.Exec(ctx, `INSERT INTO holders (process, host, machine, renewed_at, expires_at) VALUES (?, ?, ?, `+now+`, `+now+` + ?)
		ON CONFLICT (process) DO UPDATE SET host = excluded.host, machine = excluded.machine,
			renewed_at = excluded.renewed_at, expires_at = excluded.expires_at`,
		l.Process, t.s.Host, l.Machine, l.Expiry.Microseconds())
	if err == nil {
		t.s.beat.reaped.Store(true)
		t.s.beat.start(t.s)
		t.s.beat.renewed(sent) // at worst early: the transaction may yet roll back, and then nothing it held was recorded
	}
	return err
}

// HolderLease reads the lease of holder's process.
func (s *Store) HolderLease(ctx context.Context, holder string) (HolderLease, error) {
	return holderLease(ctx, s.Get, s.dbNow(), holder)
}

func (t *Tx) HolderLease(ctx context.Context, holder string) (HolderLease, error) {
	return holderLease(ctx, t.Get, t.s.dbNow(), holder)
}

func holderLease(ctx context.Context, get func(context.Context, any, string, ...any) error, now, holder string) (HolderLease, error) {
	l := HolderLease{Process: ProcessOf(holder)}
	var row struct {
		Machine string `db:"machine"`
		Expires int64  `db:"expires_at"`
		Expired int    `db:"expired"`
	}
	err := get(ctx, &row, `SELECT machine, expires_at, CASE WHEN expires_at > `+now+` THEN 0 ELSE 1 END AS expired
		FROM holders WHERE process = ?`, l.Process)
	if errors.Is(err, sql.ErrNoRows) {
		return l, nil
	}
	if err != nil {
		return l, err
	}
	l.Found, l.Machine, l.Expired, l.ExpiresAt = true, row.Machine, row.Expired != 0, base.FromMicros(row.Expires)
	return l, nil
}

// IsGone asks c whether other, the holder found, is gone, reading its
// lease in this transaction; why is "" when it is not.
func (t *Tx) IsGone(ctx context.Context, c Claim, other string) (HolderLease, string, error) {
	l, err := t.HolderLease(ctx, other)
	if err != nil {
		return l, "", err
	}
	if gone, why := c.Gone(other, l); gone {
		if why == "" {
			why = "gone"
		}
		return l, why, nil
	}
	return l, "", nil
}

// heartbeat renews this Store's lease every Liveness.Heartbeat from the
// first hold until Close.
type heartbeat struct {
	mu     sync.Mutex
	live   Liveness
	reaped atomic.Bool // expired leases were dropped once (hold)
	stop   chan struct{}
	done   chan struct{}
	closed bool
	// The lease as this process can vouch for it, by its own clock: valid
	// until validUntil (a renewal's send time plus the expiry: the
	// database's expiry is no earlier). A renewal sent after validUntil
	// renews a lease that had lapsed meanwhile (brokenAt): whatever was
	// held before it may have been taken over.
	validUntil, brokenAt time.Time
}

// held reports whether the lease is held and renewed by the heartbeat
// with at least half its expiry to run.
func (h *heartbeat) held() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.stop != nil && time.Until(h.validUntil) > h.live.Expiry/2
}

// renewed records a renewal of the lease sent at sent.
func (h *heartbeat) renewed(sent time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.validUntil.IsZero() && sent.After(h.validUntil) {
		h.brokenAt = sent
	}
	h.validUntil = sent.Add(h.live.Expiry)
}

// LeaseLapsedError is a deletion refused before anything was removed:
// this process's lease in the store may have lapsed since the operation
// took its lock (the process was paused, or could not renew it, for
// holder_expiry), so another process may have taken the lock over and
// settled what this one left pending.
type LeaseLapsedError struct {
	BrokenAt time.Time // when a renewal found the lease lapsed; zero if it is lapsing now
}

func (e *LeaseLapsedError) Error() string {
	return "this process's lease in the store lapsed (it was paused or could not renew it for holder_expiry): " +
		"what it held may have been taken over, so it stops before changing anything more"
}

// LeaseHeldSince is nil if this Store's lease has been held unbroken
// since t and still is, with margin to spare, by this process's clock;
// else a *LeaseLapsedError. A deletion asks it between its pending record
// and the removal: a process paused there past its lease must not delete
// what the process that took over has settled. A Store that holds no
// lease (no liveness configured, or no holder recorded yet) has nothing
// to lose.
func (s *Store) LeaseHeldSince(t time.Time) error {
	h := &s.beat
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.live.Process == "" || h.validUntil.IsZero() {
		return nil
	}
	// The margin covers a removal that starts just after the check.
	margin := h.live.Expiry / 10
	if h.brokenAt.After(t) || !time.Now().Before(h.validUntil.Add(-margin)) {
		return &LeaseLapsedError{BrokenAt: h.brokenAt}
	}
	return nil
}

func (h *heartbeat) start(s *Store) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stop != nil || h.closed {
		return
	}
	h.stop, h.done = make(chan struct{}), make(chan struct{})
	go h.run(s, h.live, h.stop, h.done)
}

func (h *heartbeat) run(s *Store, l Liveness, stop, done chan struct{}) {
	defer close(done)
	tick := time.NewTicker(l.Heartbeat)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
			// A renewal that fails (the store unreachable) is tried again at
			// the next tick; the lease lapses only if none succeeds before
			// it expires, and then this process's records are fenced off
			// (AppendPendingUnlessLeased) rather than trusted.
			ctx, cancel := context.WithTimeout(context.Background(), l.Heartbeat)
			sent := time.Now()
			res, err := s.SQL.ExecContext(ctx, s.SQL.Rebind(`UPDATE holders SET renewed_at = `+s.dbNow()+`, expires_at = `+s.dbNow()+` + ? WHERE process = ?`),
				l.Expiry.Microseconds(), l.Process)
			cancel()
			if err == nil {
				if n, err := res.RowsAffected(); err == nil && n == 1 {
					h.renewed(sent)
				}
			}
		}
	}
}

// close stops the heartbeat and waits for it. The lease is left to
// expire: another Store of this process may still hold records under it.
func (h *heartbeat) close() {
	h.mu.Lock()
	stop, done := h.stop, h.done
	h.closed, h.stop = true, nil
	h.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
}
