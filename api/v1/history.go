package apiv1

import "time"

// HistoryPoint is one stored figure: a snapshot's total, or the disk's
// use at a scheduled pass.
type HistoryPoint struct {
	At    time.Time `json:"at"`
	Bytes uint64    `json:"bytes"`
	Files uint64    `json:"files"` // what the walk counted; 0 for the disk
}

// TreeHistory is one tree's stored snapshots over the window and its
// figures and limits now (0: no limit).
type TreeHistory struct {
	Area      string         `json:"area"`
	UsedBytes uint64         `json:"used_bytes"` // now, as a project's show reads it
	BytesSoft uint64         `json:"bytes_soft"`
	BytesHard uint64         `json:"bytes_hard"`
	Snapshots int            `json:"snapshots"` // complete snapshots in the window, before thinning
	Partial   int            `json:"partial"`   // snapshots left out: their walk ran out of its budget and undercounts
	Thinned   bool           `json:"thinned"`   // Points holds each span's highest, not every snapshot
	Points    []HistoryPoint `json:"points"`
}

// ProjectHistory is GET …/projects/{id}/history: each of the project's
// trees over the window, oldest point first.
type ProjectHistory struct {
	Project     string        `json:"project"`
	GeneratedAt time.Time     `json:"generated_at"`
	Since       time.Time     `json:"since"`
	Trees       []TreeHistory `json:"trees"`
}

// DiskHistory is GET /v1/workspace/storage/history: the root's
// filesystem's use at each scheduled snapshot pass over the window (what
// each pass found free, taken from the size now).
type DiskHistory struct {
	GeneratedAt time.Time      `json:"generated_at"`
	Since       time.Time      `json:"since"`
	TotalBytes  uint64         `json:"total_bytes"`
	UsedBytes   uint64         `json:"used_bytes"` // now
	Passes      int            `json:"passes"`     // before thinning
	Thinned     bool           `json:"thinned"`
	Points      []HistoryPoint `json:"points"`
}
