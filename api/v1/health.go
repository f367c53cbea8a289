package apiv1

import "time"

// HealthStatus is one part's status, and the whole answer's (the worst).
type HealthStatus string

const (
	HealthOK       HealthStatus = "ok"
	HealthWarn     HealthStatus = "warn"
	HealthCritical HealthStatus = "critical"
	HealthError    HealthStatus = "error" // the part could not be measured
)

// Health is GET /v1/system/health: is this host fit to run sandboxes.
type Health struct {
	Status          HealthStatus `json:"status"`
	CheckedAt       time.Time    `json:"checked_at"`
	DurationSeconds float64      `json:"duration_seconds"`
	Disk            *DiskPart    `json:"disk,omitempty"`
	CPU             *CPUPart     `json:"cpu,omitempty"`
	Memory          *MemoryPart  `json:"memory,omitempty"`
	Docker          *DockerPart  `json:"docker,omitempty"`
	Quota           *QuotaPart   `json:"quota,omitempty"`
	Store           *StorePart   `json:"store,omitempty"`
	// Thresholds are the levels the parts were judged by (the health_* settings).
	Thresholds *HealthThresholds `json:"thresholds,omitempty"`
}

// HealthThresholds are the levels a Health's parts are judged by.
type HealthThresholds struct {
	DiskFreeWarnPercent            float64 `json:"disk_free_warn_percent"` // space or inodes available, percent of the total
	DiskFreeCriticalPercent        float64 `json:"disk_free_critical_percent"`
	MemoryAvailableWarnPercent     float64 `json:"memory_available_warn_percent"`
	MemoryAvailableCriticalPercent float64 `json:"memory_available_critical_percent"`
	LoadPerCoreWarn                float64 `json:"load_per_core_warn"` // 5-minute load average per core
	LoadPerCoreCritical            float64 `json:"load_per_core_critical"`
}

// Part is what every part of the health answer carries besides its figures.
type Part struct {
	Status HealthStatus `json:"status"`
	// Reason says why the status is not ok ("12.0% free on /srv/sandbox/cache").
	Reason string `json:"reason,omitempty"`
	// Error and Fix are set when Status is "error".
	Error           string  `json:"error,omitempty"`
	Fix             string  `json:"fix,omitempty"`
	DurationSeconds float64 `json:"duration_seconds"`
}

// DiskPart is the free space and inodes under the root: the statfs of the
// root and of each area base.
type DiskPart struct {
	Part
	Paths []DiskPath `json:"paths"`
}

// DiskPath is one filesystem's figures (one statfs answer).
type DiskPath struct {
	Path  string `json:"path"`
	Area  string `json:"area,omitempty"` // "" for the root itself
	Error string `json:"error,omitempty"`
	// TotalBytes, FreeBytes count every block; AvailableBytes only those a
	// non-root process may use (df's Avail), which is what the free
	// percentage and the thresholds use: sandboxes do not run as root.
	TotalBytes     uint64  `json:"total_bytes"`
	FreeBytes      uint64  `json:"free_bytes"`
	AvailableBytes uint64  `json:"available_bytes"`
	FreePercent    float64 `json:"free_percent"`
	TotalInodes    uint64  `json:"total_inodes"`
	FreeInodes     uint64  `json:"free_inodes"`
	// FreeInodesPercent is absent where the filesystem reports no inode
	// total (btrfs allocates them as needed and cannot run out).
	FreeInodesPercent *float64 `json:"free_inodes_percent,omitempty"`
	// SameFilesystemAsRoot: an area base that is no mount of its own, so
	// that a reader does not count its space twice.
	SameFilesystemAsRoot bool `json:"same_filesystem_as_root,omitempty"`
}

// CPUPart is the host's load and busy time (/proc/loadavg, /proc/stat).
type CPUPart struct {
	Part
	Load1  float64 `json:"load1"`
	Load5  float64 `json:"load5"`
	Load15 float64 `json:"load15"`
	Cores  int     `json:"cores"`
	// LoadPerCore is Load5 / Cores, what the thresholds judge: the 5-minute
	// average rides out a single build's spike yet shows a host that stays
	// saturated.
	LoadPerCore float64 `json:"load_per_core"`
	// BusyPercent is the share of CPU time not idle (nor waiting for I/O)
	// over the last BusyIntervalSeconds, across all cores; null when
	// unknown (no earlier sample, or no time passed between them).
	BusyPercent         *float64 `json:"busy_percent"`
	BusyIntervalSeconds float64  `json:"busy_interval_seconds"`
}

// MemoryPart is the host's memory (/proc/meminfo).
type MemoryPart struct {
	Part
	TotalBytes       uint64  `json:"total_bytes"`
	AvailableBytes   uint64  `json:"available_bytes"`
	AvailablePercent float64 `json:"available_percent"`
	SwapTotalBytes   uint64  `json:"swap_total_bytes"`
	SwapFreeBytes    uint64  `json:"swap_free_bytes"`
}

// DockerPart is the Docker engine: what docker system df and docker ps show.
type DockerPart struct {
	Part
	Host string `json:"host"`
	// Counts are read on every answer: listing containers is cheap.
	ContainersRunning int `json:"containers_running"`
	ContainersTotal   int `json:"containers_total"`
	// The byte figures come from the daemon's disk usage, which is
	// expensive for it (it sizes every layer and volume): they are reused
	// for the cache TTL, and DiskUsageAt says when the daemon computed them.
	ImagesBytes     int64     `json:"images_bytes"`
	Images          int64     `json:"images"`
	ContainersBytes int64     `json:"containers_bytes"`
	BuildCacheBytes int64     `json:"build_cache_bytes"`
	VolumesBytes    int64     `json:"volumes_bytes"`
	DiskUsageAt     time.Time `json:"disk_usage_at"`
}

// QuotaPart is the quota backend in force.
type QuotaPart struct {
	Part
	Backend     Backend `json:"backend"`
	Accounting  *bool   `json:"accounting,omitempty"`
	Enforcement *bool   `json:"enforcement,omitempty"`
}

// StorePart is the store's reachability: whether it answers, and how fast.
type StorePart struct {
	Part
	Reachable      bool    `json:"reachable"`
	LatencySeconds float64 `json:"latency_seconds"`
}
