package journal

import "time"

// The limits a crossing names (QuotaExceeded.Limit, QuotaOK.Limit), as the
// flags and JSON fields that set them are named.
const (
	LimitBytesSoft  = "bytes_soft"
	LimitBytesHard  = "bytes_hard"
	LimitInodesSoft = "inodes_soft"
	LimitInodesHard = "inodes_hard"
)

// LimitNames is every limit a crossing may name, soft before hard, bytes
// before inodes.
var LimitNames = []string{LimitBytesSoft, LimitBytesHard, LimitInodesSoft, LimitInodesHard}

// Who saw a crossing first (QuotaExceeded.SeenBy, QuotaOK.SeenBy).
const (
	// SeenByAdmission: a write through xfsq, or an admission check.
	SeenByAdmission = "admission"
	// SeenByWalk: a walk of the tree (a snapshot, a refresh, top).
	SeenByWalk = "walk"
	// SeenByKernel: the kernel's counters, read at a scheduled pass or a
	// metrics scrape (XFS, ext4).
	SeenByKernel = "kernel"
	// SeenByScrape: the fallback's figures read at a metrics scrape.
	SeenByScrape = "scrape"
	// SeenBySweep: a sweep's quota check.
	SeenBySweep = "sweep"
)

// QuotaOK: a tree is back under a limit it had reached (journalled once,
// by whoever saw it first).
type QuotaOK struct {
	Area string `json:"area"`
	// Limit is which limit: LimitBytesSoft, LimitBytesHard, …
	Limit      string `json:"limit"`
	UsedBytes  uint64 `json:"used_bytes"`
	UsedInodes uint64 `json:"used_inodes"`
	// LimitValue is the limit's figure now (bytes or inodes; 0: the limit
	// was removed).
	LimitValue uint64 `json:"limit_value"`
	// ExceededAt is when the crossing this ends was recorded.
	ExceededAt *time.Time `json:"exceeded_at,omitempty"`
	SeenBy     string     `json:"seen_by"`
}

func (QuotaOK) Type() Type { return TypeQuotaOK }
