package apiv1

import "time"

// FleetHost is one host of the fleet (GET /v1/fleet/hosts): its last
// heartbeat and whether it is stale.
type FleetHost struct {
	Host string `json:"host"`
	// LastSeenAt is its last heartbeat (null: it never beat: a host known
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
	This             bool    `json:"this,omitempty"` // the host answering
	// RetiredAt is set once an operator retired it; it is then off the
	// live list but its history stays.
	RetiredAt *time.Time `json:"retired_at,omitempty"`
	RetiredBy string     `json:"retired_by,omitempty"`
}

// FleetHosts is GET /v1/fleet/hosts: the live hosts and, apart, the
// retired ones.
type FleetHosts struct {
	GeneratedAt time.Time `json:"generated_at"`
	// StaleAfterSeconds is the threshold (fleet_stale_after of the host
	// answering); a host is stale past it or past twice its own interval.
	StaleAfterSeconds float64     `json:"stale_after_seconds"`
	Hosts             []FleetHost `json:"hosts"`
	Retired           []FleetHost `json:"retired"`
}

// FleetTree is one tree of a host of the fleet with the figures the
// store holds and their age (GET /v1/fleet/storage): another host's trees
// are never walked or asked of a kernel, only read as that host last
// recorded them. Percent is of the byte hard limit (0 when there is
// none); FiguresAt is when the figures were taken (the last walk or
// snapshot; null: never measured), FiguresAgeSeconds how long ago;
// HostStale says the host holding the tree has stopped reporting, so its
// figures may be older than they look.
type FleetTree struct {
	Host              string     `json:"host"`
	Project           string     `json:"project"`
	Area              string     `json:"area"`
	Backend           string     `json:"backend"`
	UsedBytes         uint64     `json:"used_bytes"`
	UsedInodes        uint64     `json:"used_inodes"`
	BytesSoft         uint64     `json:"bytes_soft"`
	BytesHard         uint64     `json:"bytes_hard"`
	InodesSoft        uint64     `json:"inodes_soft"`
	InodesHard        uint64     `json:"inodes_hard"`
	Percent           float64    `json:"percent"`
	FiguresAt         *time.Time `json:"figures_at"`
	FiguresAgeSeconds *float64   `json:"figures_age_seconds"`
	HostStale         bool       `json:"host_stale"`
}

// FleetStorage is GET /v1/fleet/storage: the hosts asked for and their trees.
type FleetStorage struct {
	GeneratedAt time.Time   `json:"generated_at"`
	Hosts       []FleetHost `json:"hosts"`
	Trees       []FleetTree `json:"trees"`
}

// RetireRequest is POST /v1/fleet/hosts/{host}/retire's body.
type RetireRequest struct {
	// Force retires a host that is still reporting.
	Force bool `json:"force,omitempty"`
}

// AbandonedDeletion is a deletion a retired host left pending, now
// journalled as abandoned: whether the entry went is unknown (the path may
// or may not still be there).
type AbandonedDeletion struct {
	Project string `json:"project"`
	Area    string `json:"area"`
	Path    string `json:"path"`
	SweepID string `json:"sweep_id,omitempty"`
}

// HostRetired is what retiring a host did.
type HostRetired struct {
	Host      string    `json:"host"`
	RetiredAt time.Time `json:"retired_at"`
	// Abandoned are the deletions the host left pending, settled as
	// abandoned: whether each entry went is unknown.
	Abandoned []AbandonedDeletion `json:"abandoned"`
	// Already: it was retired before, at RetiredAt; nothing was done.
	Already bool `json:"already,omitempty"`
}
