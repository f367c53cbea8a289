package apiv1

import (
	"encoding/json"
	"reflect"
	"strconv"

	"github.com/xfsq/xfsq/units"
)

// Size is a byte count in a request body: a JSON number, or a string in
// the CLI's forms ("10GiB", "512k"). It is sent as a number.
type Size uint64

func (s *Size) UnmarshalJSON(b []byte) error { return parseQuantity(b, (*uint64)(s), units.ParseSize) }

// Count is a file count in a request body: a number, or a string ("10k").
type Count uint64

func (c *Count) UnmarshalJSON(b []byte) error {
	return parseQuantity(b, (*uint64)(c), units.ParseCount)
}

func parseQuantity(b []byte, dst *uint64, parse func(string) (uint64, error)) error {
	var n uint64
	if err := json.Unmarshal(b, &n); err == nil {
		*dst = n
		return nil
	}
	// A json.UnmarshalTypeError: the decoder adds the field's name to it,
	// so that the server's 400 names the field.
	var str string
	if err := json.Unmarshal(b, &str); err != nil {
		return &json.UnmarshalTypeError{Value: string(b) + " (use a whole number or a string such as \"10GiB\")", Type: reflect.TypeFor[uint64]()}
	}
	n, err := parse(str)
	if err != nil {
		return &json.UnmarshalTypeError{Value: strconv.Quote(str) + " (" + err.Error() + ")", Type: reflect.TypeFor[uint64]()}
	}
	*dst = n
	return nil
}

// Limits are a tree's limits in a request; an absent (nil) field is
// unchanged (PATCH) or the default (POST), and 0 is no limit. The With
// methods set one without a pointer:
//
//	apiv1.Limits{}.WithBytesHard(10 << 30).WithInodesHard(100_000)
type Limits struct {
	BytesSoft  *Size  `json:"bytes_soft,omitempty"`
	BytesHard  *Size  `json:"bytes_hard,omitempty"`
	InodesSoft *Count `json:"inodes_soft,omitempty"`
	InodesHard *Count `json:"inodes_hard,omitempty"`
}

// WithBytesSoft is l with the soft byte limit n.
func (l Limits) WithBytesSoft(n uint64) Limits { s := Size(n); l.BytesSoft = &s; return l }

// WithBytesHard is l with the hard byte limit n.
func (l Limits) WithBytesHard(n uint64) Limits { s := Size(n); l.BytesHard = &s; return l }

// WithInodesSoft is l with the soft file count limit n.
func (l Limits) WithInodesSoft(n uint64) Limits { c := Count(n); l.InodesSoft = &c; return l }

// WithInodesHard is l with the hard file count limit n.
func (l Limits) WithInodesHard(n uint64) Limits { c := Count(n); l.InodesHard = &c; return l }

// AddRequest is the body of POST /v1/workspace/storage/projects.
type AddRequest struct {
	Project string `json:"project"`
	AreaLimits
}

// AreaLimits are a new project's limits, per area; an area left out gets
// the installation's default (the default_*quota settings).
type AreaLimits struct {
	Workspace Limits `json:"workspace"`
	Cache     Limits `json:"cache"`
	Scratch   Limits `json:"scratch"`
}

// SetRequest is the body of PATCH …/projects/{id}: the limits of one tree.
type SetRequest struct {
	Area string `json:"area,omitempty"` // workspace (default), cache or inbound (_root)
	Limits
}

// LeaseRequest is the body of POST …/leases/{run}.
type LeaseRequest struct {
	// TTL is a duration ("2h", "1d"); default 2h, at most 7d.
	TTL string `json:"ttl,omitempty"`
}

// SweepRequest is the body of POST …/projects/{id}/sweep: {"dry_run":
// true, "areas": [...]} makes a plan, {"plan_id": "pl-…"} applies that
// plan, {"dry_run": false, "areas": [...]} sweeps now. A body that says
// none of these is refused: nothing is deleted unless the caller said which
// way.
type SweepRequest struct {
	DryRun *bool    `json:"dry_run,omitempty"`
	Areas  []string `json:"areas,omitempty"`
	PlanID string   `json:"plan_id,omitempty"`
}
