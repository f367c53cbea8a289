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

	apiv1 "github.com/xfsq/xfsq/api/v1"
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

// The fleet's answers are the wire's (api/v1), which the server encodes
// as they are: FleetHosts (GET /v1/fleet/hosts), FleetStorage (GET
// /v1/fleet/storage) and RetireOutcome (POST …/retire).
type (
	FleetHost         = apiv1.FleetHost
	FleetHosts        = apiv1.FleetHosts
	FleetTree         = apiv1.FleetTree
	FleetStorage      = apiv1.FleetStorage
	RetireOutcome     = apiv1.HostRetired
	AbandonedDeletion = apiv1.AbandonedDeletion
)

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
