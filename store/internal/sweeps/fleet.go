package sweeps

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/store/internal/base"
	"github.com/xfsq/xfsq/store/internal/eventlog"
	"github.com/xfsq/xfsq/store/internal/registry"
)

// The fleet: every host sharing this store, read across hosts. Everything
// else in the store is scoped by Store.Host; only these reads and
// RetireHost reach another host's rows, and none of them changes a row
// of a live host.

// Beat is what one host says of itself at each heartbeat.
type Beat struct {
	At       time.Time
	Version  string
	Backend  string
	Root     string
	Interval time.Duration // how often it beats: a reader allows for it
}

// FleetHost is one host as the fleet knows it: its last heartbeat, or
// (LastSeen zero) only the projects it registered, from a host that never
// beat (a CLI-only host, or an xfsq older than the fleet view).
type FleetHost struct {
	Host      string        `db:"host"`
	FirstSeen time.Time     `db:"-"`
	LastSeen  time.Time     `db:"-"`
	Version   string        `db:"version"`
	Backend   string        `db:"backend"`
	Root      string        `db:"root"`
	Projects  int64         `db:"projects"`
	Interval  time.Duration `db:"-"`
	RetiredAt time.Time     `db:"-"`
	RetiredBy string        `db:"retired_by"`
}

// Heartbeat records b as this host's latest word. The project count is
// read in the same statement, so it is the registry's as of b.At. A
// retired host's beat is recorded but leaves it retired: retiredAt says
// since when (zero: not retired), for the caller to warn.
func (s *Store) Heartbeat(ctx context.Context, b Beat) (retiredAt time.Time, err error) {
	var retired int64
	at := base.ToMicros(b.At)
	err = s.Get(ctx, &retired, `INSERT INTO fleet_hosts (host, first_seen, last_seen, version, backend, root, projects, interval_us)
		VALUES (?, ?, ?, ?, ?, ?, (SELECT COUNT(*) FROM projects WHERE host = ? AND name <> ?), ?)
		ON CONFLICT (host) DO UPDATE SET last_seen = excluded.last_seen, version = excluded.version,
			backend = excluded.backend, root = excluded.root, projects = excluded.projects, interval_us = excluded.interval_us
		RETURNING retired_at`,
		s.Host, at, at, b.Version, b.Backend, b.Root, s.Host, registry.RootOwner, b.Interval.Microseconds())
	return base.FromMicros(retired), err
}

type fleetRow struct {
	FleetHost
	FirstSeen int64 `db:"first_seen"`
	LastSeen  int64 `db:"last_seen"`
	Interval  int64 `db:"interval_us"`
	RetiredAt int64 `db:"retired_at"`
}

// FleetHosts lists every host the store knows, by name: those that beat,
// and those that only registered projects (LastSeen zero), so that no
// host is missing from the list for never having reported.
func (s *Store) FleetHosts(ctx context.Context) ([]FleetHost, error) {
	var rows []fleetRow
	err := s.Sel(ctx, &rows, `SELECT host, first_seen, last_seen, version, backend, root, projects, interval_us, retired_at, retired_by
		FROM fleet_hosts
		UNION ALL
		SELECT host, 0, 0, '', '', '', SUM(CASE WHEN name <> ? THEN 1 ELSE 0 END), 0, 0, ''
		FROM projects WHERE host NOT IN (SELECT host FROM fleet_hosts) GROUP BY host
		ORDER BY host`, registry.RootOwner)
	if err != nil {
		return nil, err
	}
	out := make([]FleetHost, len(rows))
	for i, r := range rows {
		h := r.FleetHost
		h.FirstSeen, h.LastSeen, h.RetiredAt = base.FromMicros(r.FirstSeen), base.FromMicros(r.LastSeen), base.FromMicros(r.RetiredAt)
		h.Interval = time.Duration(r.Interval) * time.Microsecond
		out[i] = h
	}
	return out, nil
}

// FleetTree is one tree of any host with the figures the store holds for
// it and when they were taken (At zero: never measured).
type FleetTree struct {
	Host       string `db:"host"`
	Project    string `db:"project"`
	Area       string `db:"area"`
	Backend    string `db:"backend"`
	UsedBytes  int64  `db:"used_bytes"`
	UsedInodes int64  `db:"used_inodes"`
	BytesSoft  int64  `db:"bytes_soft"`
	BytesHard  int64  `db:"bytes_hard"`
	InodesSoft int64  `db:"inodes_soft"`
	InodesHard int64  `db:"inodes_hard"`
	At         int64  `db:"at"`
}

// FleetTrees lists the trees of hosts (every host when nil), by host,
// project and area, in one statement. A fallback tree's figure is its
// last walk plus what was written through xfsq since; a kernel tree's is
// its latest snapshot's (the kernel's count when the walk took it).
func (s *Store) FleetTrees(ctx context.Context, hosts []string) ([]FleetTree, error) {
	q := `SELECT t.host, t.project, t.area, t.backend, t.bytes_soft, t.bytes_hard, t.inodes_soft, t.inodes_hard,
		CASE WHEN t.walked_at > 0 THEN t.walked_bytes + t.ledger_bytes
			ELSE COALESCE((SELECT CASE WHEN n.kernel_bytes >= 0 THEN n.kernel_bytes ELSE n.size_bytes END FROM snapshots n
				WHERE n.host = t.host AND n.project = t.project AND n.area = t.area ORDER BY n.at DESC LIMIT 1), 0) END AS used_bytes,
		CASE WHEN t.walked_at > 0 THEN t.walked_inodes + t.ledger_inodes
			ELSE COALESCE((SELECT n.files + n.dirs FROM snapshots n
				WHERE n.host = t.host AND n.project = t.project AND n.area = t.area ORDER BY n.at DESC LIMIT 1), 0) END AS used_inodes,
		CASE WHEN t.walked_at > 0 THEN t.walked_at
			ELSE COALESCE((SELECT MAX(n.at) FROM snapshots n WHERE n.host = t.host AND n.project = t.project AND n.area = t.area), 0) END AS at
		FROM trees t`
	var args []any
	if hosts != nil {
		if len(hosts) == 0 {
			return []FleetTree{}, nil
		}
		q += ` WHERE t.host IN (?` + strings.Repeat(`, ?`, len(hosts)-1) + `)`
		for _, h := range hosts {
			args = append(args, h)
		}
	}
	q += ` ORDER BY t.host, t.project, t.area`
	return base.BoundedRead(ctx, s.DB, func(ctx context.Context) ([]FleetTree, error) {
		out := []FleetTree{}
		return out, s.WithoutJIT(ctx, func(db sqlx.QueryerContext) error {
			rows, err := db.QueryContext(ctx, s.SQL.Rebind(q), args...)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() { // scanned by hand: sqlx's reflection was most of the client's time on 30,000 rows
				var t FleetTree
				if err := rows.Scan(&t.Host, &t.Project, &t.Area, &t.Backend, &t.BytesSoft, &t.BytesHard, &t.InodesSoft, &t.InodesHard,
					&t.UsedBytes, &t.UsedInodes, &t.At); err != nil {
					return err
				}
				out = append(out, t)
			}
			return rows.Err()
		})
	})
}

// Retired is what RetireHost did.
type Retired struct {
	Host string
	At   time.Time
	// Abandoned are the deletions the host left pending, now settled as
	// abandoned: whether each entry went, no host is left to look.
	Abandoned []PendingEviction
	// AlreadyAt is set when the host was retired before (nothing done).
	AlreadyAt time.Time
}

// RetireHost retires host: in one transaction it settles every deletion
// the host left pending as abandoned (never done: nothing here can see
// that host's files), frees its sweep locks and passes, marks it retired
// and journals host.retired — all as records of that host, whose history
// stays whole. It never deletes a row of the host's registry or journal.
func (s *Store) RetireHost(ctx context.Context, host, actor string, now time.Time) (Retired, error) {
	out := Retired{Host: host, At: base.FromMicros(base.ToMicros(now))} // as stored
	err := s.InTx(ctx, func(tx *Tx) error {
		if err := tx.Lock(ctx, "fleet:"+host); err != nil {
			return err
		}
		var before int64
		if err := tx.Get(ctx, &before, `SELECT COALESCE(MAX(retired_at), 0) FROM fleet_hosts WHERE host = ?`, host); err != nil {
			return err
		}
		if before > 0 {
			out.AlreadyAt = base.FromMicros(before)
			return nil
		}
		var err error
		if out.Abandoned, err = tx.abandonPending(ctx, host, actor, now); err != nil {
			return err
		}
		for _, table := range []string{"sweep_locks", "leases"} {
			if _, err := tx.Exec(ctx, `DELETE FROM `+table+` WHERE host = ?`, host); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `UPDATE passes SET holder = '' WHERE host = ?`, host); err != nil {
			return err
		}
		at := base.ToMicros(now)
		if _, err := tx.Exec(ctx, `INSERT INTO fleet_hosts (host, first_seen, last_seen, retired_at, retired_by) VALUES (?, 0, 0, ?, ?)
			ON CONFLICT (host) DO UPDATE SET retired_at = excluded.retired_at, retired_by = excluded.retired_by`, host, at, actor); err != nil {
			return err
		}
		return tx.insertEvent(ctx, host, "", actor, now, journal.HostRetired{Host: host, Abandoned: len(out.Abandoned)})
	})
	return out, err
}

// abandonPending settles host's pending deletions as abandoned, each
// record of the host and its project, and drops them from the pending set.
func (t *Tx) abandonPending(ctx context.Context, host, actor string, now time.Time) ([]PendingEviction, error) {
	var rows []eventlog.EventRow
	if err := t.Sel(ctx, &rows, `SELECT e.id, e.at, e.type, e.host, e.project, e.actor, e.payload
		FROM evictions_pending p JOIN events e ON e.id = p.event_id WHERE p.host = ? ORDER BY e.id`, host); err != nil {
		return nil, err
	}
	out := []PendingEviction{}
	for _, r := range rows {
		var rec journal.Evicted
		if err := json.Unmarshal([]byte(r.Payload), &rec); err != nil {
			return nil, fmt.Errorf("journal record %d: %w", r.ID, err)
		}
		rec.State, rec.Bytes, rec.Entries, rec.Inodes, rec.Left = journal.StateAbandoned, 0, 0, 0, nil
		rec.Error = fmt.Sprintf("host %s was retired with this deletion pending: whether the entry went is unknown", host)
		if err := t.insertEvent(ctx, host, r.Project, actor, now, rec); err != nil {
			return nil, err
		}
		out = append(out, PendingEviction{Project: r.Project, Record: rec})
	}
	_, err := t.Exec(ctx, `DELETE FROM evictions_pending WHERE host = ?`, host)
	return out, err
}

// insertEvent journals p as a record of host, which may be another than
// the store's: only RetireHost writes another host's records.
func (t *Tx) insertEvent(ctx context.Context, host, project, actor string, at time.Time, p journal.Payload) error {
	data, err := json.Marshal(p)
	if err != nil {
		return err
	}
	_, err = t.Exec(ctx, `INSERT INTO events (at, type, host, project, actor, payload) VALUES (?, ?, ?, ?, ?, ?)`,
		base.ToMicros(at), string(p.Type()), host, project, actor, string(data))
	return err
}
