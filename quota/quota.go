// Package quota owns the vocabulary every storage backend speaks: project IDs,
// limits, usage, and the errors a backend returns. It holds no implementation;
// quota/xfs (kernel enforcement) and quota/fallback (application level) do.
//
// Callers of this package never see a syscall: a backend speaks in trees,
// project IDs and limits, and reports failures as *OpError or *UnsupportedError.
package quota

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/xfsq/xfsq/units"
)

// ProjectID is a filesystem project ID. 0 is never handed out: XFS does not
// enforce limits on ID 0 and uses its limits as the defaults for every ID.
type ProjectID uint32

// Limits bound one tree. Zero means "no limit" for that field, as in the kernel.
type Limits struct {
	BytesSoft  uint64 `json:"bytes_soft"`
	BytesHard  uint64 `json:"bytes_hard"`
	InodesSoft uint64 `json:"inodes_soft"`
	InodesHard uint64 `json:"inodes_hard"`
}

// Usage is what a tree holds, as the backend counts it (allocated bytes).
type Usage struct {
	Bytes  uint64 `json:"used_bytes"`
	Inodes uint64 `json:"used_inodes"`
	// BytesGraceEnds and InodesGraceEnds are set while usage is over the soft
	// limit: after that instant the soft limit is enforced like a hard one.
	BytesGraceEnds  Instant `json:"bytes_grace_ends,omitzero"`
	InodesGraceEnds Instant `json:"inodes_grace_ends,omitzero"`
}

// Instant is a moment as Unix nanoseconds, zero for none. Usage holds its
// grace ends as Instants, not time.Time, so that a Quota holds no pointer
// (time.Time keeps a *Location): an enumeration's result of 1,000 entries
// is then 72 KB the garbage collector never scans, instead of 104 KB it
// must, and a kernel answer converts without building a time.Time per ID.
type Instant int64

// InstantOf is t as an Instant; the zero time is the zero Instant.
func InstantOf(t time.Time) Instant {
	if t.IsZero() {
		return 0
	}
	return Instant(t.UnixNano())
}

// InstantOfUnix is sec seconds after the epoch; 0 is the zero Instant.
// Beyond what nanoseconds hold (the year 2262) it is the last moment they
// do, which reads as "a grace that does not end" just as well.
func InstantOfUnix(sec int64) Instant {
	const most = math.MaxInt64 / int64(time.Second)
	return Instant(min(max(sec, -most), most) * int64(time.Second))
}

// IsZero reports whether no moment is set.
func (i Instant) IsZero() bool { return i == 0 }

// Time is the moment in UTC; the zero Instant is the zero time.
func (i Instant) Time() time.Time {
	if i == 0 {
		return time.Time{}
	}
	return time.Unix(0, int64(i)).UTC()
}

// MarshalJSON writes the moment as time.Time does (RFC 3339).
func (i Instant) MarshalJSON() ([]byte, error) { return i.Time().MarshalJSON() }

// Quota is the limits and usage of one project ID.
type Quota struct {
	ID ProjectID `json:"project_id"`
	Limits
	Usage
}

// OwnsData reports whether bytes or inodes are still charged to the ID.
func (q Quota) OwnsData() bool { return q.Bytes != 0 || q.Inodes != 0 }

// Backend enforces limits on directory trees of one filesystem. The split
// follows Kubernetes' fsquota: detection happens when a backend is opened
// (supports), then assign, usage, clear.
type Backend interface {
	// Name is what every output shows, e.g. "xfs" or "fallback (ext4: no project quota)".
	Name() string
	// Assign makes dir and everything below it count against id, and makes
	// entries created later inherit it.
	Assign(dir string, id ProjectID) error
	// SetLimits replaces the limits of id.
	SetLimits(id ProjectID, l Limits) error
	// Get reads limits and usage of id. An ID the backend does not know reads
	// as zero limits and zero usage.
	Get(id ProjectID) (Quota, error)
	// All returns every ID with usage or limits on the filesystem.
	All() (map[ProjectID]Quota, error)
	// Clear removes the limits of id; usage stays charged to the ID until
	// its data is gone. Clearing an unknown ID succeeds.
	Clear(id ProjectID) error
}

// ErrInUse is wrapped when an ID cannot be released because it still owns data.
var ErrInUse = errors.New("project ID still owns data")

// UnsupportedError says why a path cannot be served by a backend and how to fix it.
type UnsupportedError struct {
	Path   string
	Short  string // for one-line outputs: "ext4: no project quota"
	Reason string // what is wrong, e.g. "ext4 is not XFS"
	Fix    string // what the operator should do
}

func (e *UnsupportedError) Error() string {
	msg := fmt.Sprintf("%s: %s", e.Path, e.Reason)
	if e.Fix != "" {
		msg += "; " + e.Fix
	}
	return msg
}

// OpError reports a failed backend call: which operation, tree and ID, and the
// syscall and errno underneath, so an operator can reproduce it by hand.
type OpError struct {
	Op      string    // "assign", "set limits", …
	Tree    string    // the directory or file involved, if any
	ID      ProjectID // the project ID involved, if any
	Syscall string    // e.g. "quotactl_fd(Q_XSETQLIM)"
	Err     error     // usually a syscall.Errno
}

func (e *OpError) Error() string {
	msg := e.Op
	if e.Tree != "" {
		msg += " " + e.Tree
	}
	if e.ID != 0 {
		msg += fmt.Sprintf(" (project %d)", e.ID)
	}
	if e.Syscall != "" {
		msg += ": " + e.Syscall
	}
	return msg + ": " + e.Err.Error()
}

func (e *OpError) Unwrap() error { return e.Err }

// LimitError is a write refused by a limit: which limit, the usage it
// would add to, what was asked for, and the limit itself.
// LimitMaxFileBytes is the Limit of a refusal by the max_file_bytes
// setting: one file over the bound, whatever the tree holds.
const LimitMaxFileBytes = "max_file_bytes"

type LimitError struct {
	Tree      string // e.g. `project "omni" workspace`
	Limit     string // bytes_hard, inodes_hard, bytes_soft, inodes_soft (past their grace), max_file_bytes, root_budget
	Used      uint64
	Reserved  uint64 // of Used, what writes in progress hold (the fallback's reservations)
	Requested uint64
	Max       uint64
	// GraceEnded is when a soft limit's grace ran out, for a refusal by one.
	GraceEnded time.Time
}

func (e *LimitError) Error() string {
	// IEC for a person, the exact figure beside it: a refusal by one byte
	// reads "2.0 MiB used + 1 B requested > 2.0 MiB limit" otherwise.
	unit := func(n uint64) string {
		if n < 1024 {
			return units.FormatIEC(n)
		}
		return fmt.Sprintf("%s (%d bytes)", units.FormatIEC(n), n)
	}
	what := "disk quota exceeded"
	switch e.Limit {
	case "inodes_hard", "inodes_soft":
		unit = func(n uint64) string {
			if n == 1 {
				return "1 file"
			}
			return fmt.Sprintf("%d files", n)
		}
		what = "file count quota exceeded"
	case LimitMaxFileBytes:
		return fmt.Sprintf("%s: file too large: %s requested, at most %s per write (max_file_bytes)",
			e.Tree, unit(e.Requested), unit(e.Max))
	case "root_budget":
		what = "sandbox root budget exceeded"
	}
	used := unit(e.Used) + " used"
	if e.Limit == "bytes_hard" || e.Limit == "inodes_hard" || e.Limit == "bytes_soft" || e.Limit == "inodes_soft" {
		// What the tree holds counts the room that writes in progress have
		// reserved: say how much, so that it is not read as what du shows.
		used = unit(e.Used-min(e.Reserved, e.Used)) + " on disk"
		if e.Reserved > 0 {
			used += " + " + unit(e.Reserved) + " reserved by writes in progress"
		}
	}
	limit := e.Limit
	if !e.GraceEnded.IsZero() {
		limit += ", whose grace ended " + e.GraceEnded.UTC().Format(time.RFC3339)
	}
	return fmt.Sprintf("%s: %s: %s + %s requested > %s limit (%s)",
		e.Tree, what, used, unit(e.Requested), unit(e.Max), limit)
}
