// Package fleet owns the fleet view beside the core: this host's
// heartbeat, the hosts sharing the root's store with each one's heartbeat
// and staleness, their trees' figures as each host last recorded them, and
// the retirement of a host that stopped. Only reads and RetireHost reach
// another host; a host's own operations stay scoped to it.
//
// It works over a narrow surface of the core (Core, and the store the core
// opened): it never opens a store or a backend, never walks or asks a
// kernel about another host's trees (it reads what that host recorded),
// never retires the host it runs as, and never imports a shell or another
// use case. The facade (package sandbox) is its only caller.
package fleet

import (
	"context"
	"fmt"
	"runtime/debug"
	"slices"
	"time"

	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/sandbox/internal/core"
	"github.com/xfsq/xfsq/settings"
	"github.com/xfsq/xfsq/store"
)

// Core is what the fleet asks of the core: its clock and settings, the
// backend this host runs, who acts, and the one answer for a host name the
// store has never heard of (which the read model's journal query gives too).
type Core interface {
	Now() time.Time
	Setting(ctx context.Context, key string) (settings.Value, error)
	BackendInfo() core.Backend
	ActorOf(ctx context.Context) string
}

// Fleet is the fleet as the host of one root sees it.
type Fleet struct {
	Core
	// Root is the sandbox root's absolute path; Store is the core's store.
	Root  string
	Store *store.Store
}

// New is the fleet view of the root c manages.
func New(c *core.Manager) *Fleet { return &Fleet{Core: c, Root: c.Root, Store: c.Store} }

// FleetHost is one host of the fleet as a reader sees it now.
type FleetHost struct {
	Host string `json:"host"`
	// LastSeenAt is its last heartbeat (nil: it never beat: a host known
	// only by the projects it registered, or an xfsq older than the fleet
	// view); AgeSeconds how long ago that was.
	LastSeenAt *time.Time `json:"last_seen_at"`
	AgeSeconds *float64   `json:"age_seconds"`
	// Stale: not seen within the threshold (or never seen). A stale host
	// is listed, never dropped.
	Stale    bool   `json:"stale"`
	Version  string `json:"version"`
	Backend  string `json:"backend"`
	Root     string `json:"root"`
	Projects int64  `json:"projects"`
	// HeartbeatSeconds is the interval the host announced (0: unknown).
	HeartbeatSeconds float64 `json:"heartbeat_seconds"`
	// This is the host answering.
	This bool `json:"this,omitempty"`
	// RetiredAt is set once an operator retired it; it is then off the
	// live list but its history stays.
	RetiredAt *time.Time `json:"retired_at,omitempty"`
	RetiredBy string     `json:"retired_by,omitempty"`
}

// FleetHosts is the fleet as one host sees it: Hosts live, Retired apart.
type FleetHosts struct {
	GeneratedAt time.Time `json:"generated_at"`
	// StaleAfterSeconds is the threshold (fleet_stale_after of the host
	// answering); a host is stale past it or past twice its own interval.
	StaleAfterSeconds float64     `json:"stale_after_seconds"`
	Hosts             []FleetHost `json:"hosts"`
	Retired           []FleetHost `json:"retired"`
}

// Version is this build as the Go toolchain recorded it.
func Version() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		return bi.Main.Version
	}
	return "unknown"
}

// HeartbeatInterval is how often Heartbeat should run (fleet_heartbeat_interval).
func (m *Fleet) HeartbeatInterval(ctx context.Context) (time.Duration, error) {
	v, err := m.Setting(ctx, "fleet_heartbeat_interval")
	return v.Duration(), err
}

// Heartbeat records this host in the fleet: its version, backend, root and
// project count, now. It returns an error naming the retirement when an
// operator retired this host: the beat is recorded, the host stays retired.
func (m *Fleet) Heartbeat(ctx context.Context, interval time.Duration) error {
	retired, err := m.Store.Heartbeat(ctx, store.Beat{At: m.Now(), Version: Version(), Backend: m.BackendInfo().Kind,
		Root: m.Root, Interval: interval})
	if err != nil {
		return fmt.Errorf("record the heartbeat of host %s: %w", m.Store.Host, err)
	}
	if !retired.IsZero() {
		return errkind.WithHint(errkind.Conflict, fmt.Errorf("host %s was retired from the fleet at %s: it is listed as retired, not live",
			m.Store.Host, retired.Format(time.RFC3339)), "serve under a new host name, or leave the host retired")
	}
	return nil
}

// FleetHosts lists every host of the store with its heartbeat and
// whether it is stale.
func (m *Fleet) FleetHosts(ctx context.Context) (FleetHosts, error) {
	threshold, err := m.Setting(ctx, "fleet_stale_after")
	if err != nil {
		return FleetHosts{}, err
	}
	rows, err := m.Store.FleetHosts(ctx)
	if err != nil {
		return FleetHosts{}, fmt.Errorf("read the fleet: %w", err)
	}
	now := m.Now()
	out := FleetHosts{GeneratedAt: now, StaleAfterSeconds: threshold.Duration().Seconds(), Hosts: []FleetHost{}, Retired: []FleetHost{}}
	for _, r := range rows {
		h := fleetHostOf(r, now, threshold.Duration())
		h.This = r.Host == m.Store.Host
		if h.RetiredAt != nil {
			out.Retired = append(out.Retired, h)
		} else {
			out.Hosts = append(out.Hosts, h)
		}
	}
	return out, nil
}

// fleetHostOf judges one host at now: stale when unseen for longer than
// threshold, or than twice its own interval (a host told to beat slowly
// is not stale between beats).
func fleetHostOf(r store.FleetHost, now time.Time, threshold time.Duration) FleetHost {
	h := FleetHost{Host: r.Host, Version: r.Version, Backend: r.Backend, Root: r.Root, Projects: r.Projects,
		HeartbeatSeconds: r.Interval.Seconds(), RetiredBy: r.RetiredBy, Stale: true}
	if !r.LastSeen.IsZero() {
		seen, age := r.LastSeen, now.Sub(r.LastSeen).Seconds()
		h.LastSeenAt, h.AgeSeconds = &seen, &age
		h.Stale = now.Sub(r.LastSeen) > max(threshold, 2*r.Interval)
	}
	if !r.RetiredAt.IsZero() {
		at := r.RetiredAt
		h.RetiredAt = &at
	}
	return h
}

// FleetTree is one tree of a host of the fleet, with the store's figures
// and their age: another host's trees are never walked or asked of a
// kernel from here, only read as that host last recorded them.
type FleetTree struct {
	Host       string  `json:"host"`
	Project    string  `json:"project"`
	Area       string  `json:"area"`
	Backend    string  `json:"backend"`
	UsedBytes  uint64  `json:"used_bytes"`
	UsedInodes uint64  `json:"used_inodes"`
	BytesSoft  uint64  `json:"bytes_soft"`
	BytesHard  uint64  `json:"bytes_hard"`
	InodesSoft uint64  `json:"inodes_soft"`
	InodesHard uint64  `json:"inodes_hard"`
	Percent    float64 `json:"percent"` // of the byte hard limit; 0 when there is none
	// FiguresAt is when the figures were taken (the last walk or
	// snapshot; nil: never measured), FiguresAgeSeconds how long ago.
	FiguresAt         *time.Time `json:"figures_at"`
	FiguresAgeSeconds *float64   `json:"figures_age_seconds"`
	// HostStale: the host holding the tree has stopped reporting, so its
	// figures may be older than they look.
	HostStale bool `json:"host_stale"`
}

// FleetStorage is the trees of the hosts asked for.
type FleetStorage struct {
	GeneratedAt time.Time   `json:"generated_at"`
	Hosts       []FleetHost `json:"hosts"`
	Trees       []FleetTree `json:"trees"`
}

// FleetQuery selects hosts of the fleet; no Hosts is every host, retired
// ones included (their history stays readable).
type FleetQuery struct {
	Hosts []string
}

// FleetStorage reads the trees of the hosts q names from the store, each
// row with its host and the age of its figures, in one statement.
func (m *Fleet) FleetStorage(ctx context.Context, q FleetQuery) (FleetStorage, error) {
	fleet, hosts, err := m.fleetHosts(ctx, q.Hosts)
	if err != nil {
		return FleetStorage{}, err
	}
	rows, err := m.Store.FleetTrees(ctx, q.Hosts)
	if err != nil {
		return FleetStorage{}, fmt.Errorf("read the fleet's trees: %w", err)
	}
	stale := map[string]bool{}
	for _, h := range hosts {
		stale[h.Host] = h.Stale
	}
	out := FleetStorage{GeneratedAt: fleet.GeneratedAt, Hosts: hosts, Trees: make([]FleetTree, 0, len(rows))}
	for _, r := range rows {
		t := FleetTree{Host: r.Host, Project: r.Project, Area: r.Area, Backend: r.Backend, UsedBytes: uint64(max(r.UsedBytes, 0)),
			UsedInodes: uint64(max(r.UsedInodes, 0)), BytesSoft: uint64(r.BytesSoft), BytesHard: uint64(r.BytesHard),
			InodesSoft: uint64(r.InodesSoft), InodesHard: uint64(r.InodesHard), HostStale: stale[r.Host]}
		if t.BytesHard > 0 {
			t.Percent = float64(t.UsedBytes) * 100 / float64(t.BytesHard)
		}
		if r.At > 0 {
			at := time.UnixMicro(r.At).UTC()
			age := fleet.GeneratedAt.Sub(at).Seconds()
			t.FiguresAt, t.FiguresAgeSeconds = &at, &age
		}
		out.Trees = append(out.Trees, t)
	}
	return out, nil
}

// fleetHosts is the fleet and, of it, the hosts named (all when none),
// refusing a name the store has never heard of: a typo must not read as
// a host with nothing on it.
func (m *Fleet) fleetHosts(ctx context.Context, names []string) (FleetHosts, []FleetHost, error) {
	fleet, err := m.FleetHosts(ctx)
	if err != nil {
		return fleet, nil, err
	}
	all := append(slices.Clone(fleet.Hosts), fleet.Retired...)
	if len(names) == 0 {
		return fleet, all, nil
	}
	var out []FleetHost
	for _, n := range names {
		i := slices.IndexFunc(all, func(h FleetHost) bool { return h.Host == n })
		if i < 0 {
			return fleet, nil, core.UnknownHost(n)
		}
		out = append(out, all[i])
	}
	return fleet, out, nil
}

// RetireOutcome is what RetireHost did.
type RetireOutcome struct {
	Host      string    `json:"host"`
	RetiredAt time.Time `json:"retired_at"`
	// Abandoned are the deletions the host left pending, settled as
	// abandoned: whether each entry went is unknown.
	Abandoned []AbandonedDeletion `json:"abandoned"`
	// Already: it was retired before, at RetiredAt; nothing was done.
	Already bool `json:"already,omitempty"`
}

// ErrHostLive is wrapped when a host still beating is asked to retire.
var ErrHostLive = errkind.Sentinel(errkind.Conflict, "is still reporting")

// RetireHost takes a host off the fleet's live list: it settles the
// deletions the host left pending as abandoned (never done: nothing here
// can see its files), frees its sweep locks, leases and passes, and
// journals host.retired, keeping every record of its history. It refuses
// this host, and a host that is not stale unless force.
func (m *Fleet) RetireHost(ctx context.Context, name string, force bool) (RetireOutcome, error) {
	if name == m.Store.Host {
		return RetireOutcome{}, errkind.WithHint(errkind.Conflict, fmt.Errorf("host %s is the host this command runs as: a host cannot retire itself", name),
			"run it from another host of the fleet, after stopping this one")
	}
	_, hosts, err := m.fleetHosts(ctx, []string{name})
	if err != nil {
		return RetireOutcome{}, err
	}
	h := hosts[0]
	if !h.Stale && h.RetiredAt == nil && !force {
		return RetireOutcome{}, errkind.WithFieldHint(errkind.Conflict, fmt.Errorf("host %s %w (last seen %.0f s ago): retiring it would "+
			"abandon the deletions it is making", name, ErrHostLive, *h.AgeSeconds), "stop its server first, or give %s to retire it anyway", "force")
	}
	res, err := m.Store.RetireHost(ctx, name, m.ActorOf(ctx), m.Now())
	if err != nil {
		return RetireOutcome{}, fmt.Errorf("retire host %s: %w", name, err)
	}
	if !res.AlreadyAt.IsZero() {
		return RetireOutcome{Host: name, RetiredAt: res.AlreadyAt, Already: true, Abandoned: []AbandonedDeletion{}}, nil
	}
	out := RetireOutcome{Host: name, RetiredAt: res.At, Abandoned: make([]AbandonedDeletion, len(res.Abandoned))}
	for i, p := range res.Abandoned {
		out.Abandoned[i] = AbandonedDeletion{Project: p.Project, Area: p.Record.Area, Path: p.Record.Path, SweepID: p.Record.SweepID}
	}
	return out, nil
}

// AbandonedDeletion is a deletion a retired host left pending: its record
// now says abandoned, and the path may or may not still be there.
type AbandonedDeletion struct {
	Project string `json:"project"`
	Area    string `json:"area"`
	Path    string `json:"path"`
	SweepID string `json:"sweep_id,omitempty"`
}
