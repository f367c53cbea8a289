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
	DiskFreeWarnPercent            float64 `json:"disk_free_warn_percent"`
	DiskFreeCriticalPercent        float64 `json:"disk_free_critical_percent"`
	MemoryAvailableWarnPercent     float64 `json:"memory_available_warn_percent"`
	MemoryAvailableCriticalPercent float64 `json:"memory_available_critical_percent"`
	LoadPerCoreWarn                float64 `json:"load_per_core_warn"`
	LoadPerCoreCritical            float64 `json:"load_per_core_critical"`
}

// Part is what every part of the health answer carries besides its figures.
type Part struct {
	Status          HealthStatus `json:"status"`
	Reason          string       `json:"reason,omitempty"`
	Error           string       `json:"error,omitempty"`
	Fix             string       `json:"fix,omitempty"`
	DurationSeconds float64      `json:"duration_seconds"`
}

// DiskPart is the free space and inodes under the root.
type DiskPart struct {
	Part
	Paths []DiskPath `json:"paths"`
}

// DiskPath is one filesystem's figures.
type DiskPath struct {
	Path           string  `json:"path"`
	Area           string  `json:"area,omitempty"`
	Error          string  `json:"error,omitempty"`
	TotalBytes     uint64  `json:"total_bytes"`
	FreeBytes      uint64  `json:"free_bytes"`
	AvailableBytes uint64  `json:"available_bytes"`
	FreePercent    float64 `json:"free_percent"`
	TotalInodes    uint64  `json:"total_inodes"`
	FreeInodes     uint64  `json:"free_inodes"`
	// FreeInodesPercent is absent where the filesystem reports no inode
	// total (btrfs allocates them as needed).
	FreeInodesPercent *float64 `json:"free_inodes_percent,omitempty"`
	// SameFilesystemAsRoot: an area base that is no mount of its own.
	SameFilesystemAsRoot bool `json:"same_filesystem_as_root,omitempty"`
}

// CPUPart is the host's load.
type CPUPart struct {
	Part
	Load1               float64  `json:"load1"`
	Load5               float64  `json:"load5"`
	Load15              float64  `json:"load15"`
	Cores               int      `json:"cores"`
	LoadPerCore         float64  `json:"load_per_core"`
	BusyPercent         *float64 `json:"busy_percent"`
	BusyIntervalSeconds float64  `json:"busy_interval_seconds"`
}

// MemoryPart is the host's memory.
type MemoryPart struct {
	Part
	TotalBytes       uint64  `json:"total_bytes"`
	AvailableBytes   uint64  `json:"available_bytes"`
	AvailablePercent float64 `json:"available_percent"`
	SwapTotalBytes   uint64  `json:"swap_total_bytes"`
	SwapFreeBytes    uint64  `json:"swap_free_bytes"`
}

// DockerPart is the Docker engine.
type DockerPart struct {
	Part
	Host              string    `json:"host"`
	ContainersRunning int       `json:"containers_running"`
	ContainersTotal   int       `json:"containers_total"`
	ImagesBytes       int64     `json:"images_bytes"`
	Images            int64     `json:"images"`
	ContainersBytes   int64     `json:"containers_bytes"`
	BuildCacheBytes   int64     `json:"build_cache_bytes"`
	VolumesBytes      int64     `json:"volumes_bytes"`
	DiskUsageAt       time.Time `json:"disk_usage_at"`
}

// QuotaPart is the quota backend in force.
type QuotaPart struct {
	Part
	Backend     Backend `json:"backend"`
	Accounting  *bool   `json:"accounting,omitempty"`
	Enforcement *bool   `json:"enforcement,omitempty"`
}

// StorePart is the store's reachability.
type StorePart struct {
	Part
	Reachable      bool    `json:"reachable"`
	LatencySeconds float64 `json:"latency_seconds"`
}
