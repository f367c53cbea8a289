package core

// LimitWarning says that a tree already holds at or over a limit it was
// just given (a hard limit of 8k on a 16 KiB tree: even the empty
// skeleton's directories count). The change stands, but writes are
// refused (hard) or warned about (soft) until the tree shrinks; each shell
// words it.
type LimitWarning struct {
	Project  string `json:"project"`
	Area     string `json:"area"`
	Resource string `json:"resource"` // "bytes" or "inodes"
	Kind     string `json:"kind"`     // "hard" or "soft"
	Used     uint64 `json:"used"`
	Limit    uint64 `json:"limit"`
}

// Limit kinds and resources a LimitWarning names.
const (
	LimitHard   = "hard"
	LimitSoft   = "soft"
	LimitBytes  = "bytes"
	LimitInodes = "inodes"
)

// overLimits is what p's trees already hold at or over: a tree past its
// hard limit is not warned about its soft one as well.
func overLimits(p Project) []LimitWarning {
	var out []LimitWarning
	for _, t := range p.Trees {
		over := func(resource, kind string, used, limit uint64) {
			if limit > 0 && used >= limit {
				out = append(out, LimitWarning{Project: p.Name, Area: t.Area, Resource: resource, Kind: kind, Used: used, Limit: limit})
			}
		}
		over(LimitBytes, LimitHard, t.UsedBytes, t.BytesHard)
		over(LimitInodes, LimitHard, t.UsedInodes, t.InodesHard)
		if t.BytesHard == 0 || t.UsedBytes < t.BytesHard {
			over(LimitBytes, LimitSoft, t.UsedBytes, t.BytesSoft)
		}
		if t.InodesHard == 0 || t.UsedInodes < t.InodesHard {
			over(LimitInodes, LimitSoft, t.UsedInodes, t.InodesSoft)
		}
	}
	return out
}
