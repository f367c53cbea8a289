package core

import (
	"time"

	"github.com/xfsq/xfsq/sandbox/internal/core/figures"
)

// The figures' vocabulary and rules are a leaf beneath the core
// (sandbox/internal/core/figures); the core and the use cases beside it
// name them as the core's.
type (
	Project      = figures.Project
	TreeStatus   = figures.TreeStatus
	Read         = figures.Read
	Backend      = figures.Backend
	LimitWarning = figures.LimitWarning
)

const (
	SnapshotInterval = figures.SnapshotInterval
	Ok               = figures.Ok
	Warn             = figures.Warn
	Deny             = figures.Deny
	LimitHard        = figures.LimitHard
	LimitSoft        = figures.LimitSoft
	LimitBytes       = figures.LimitBytes
	LimitInodes      = figures.LimitInodes
	BackendXFS       = figures.BackendXFS
	BackendExt4      = figures.BackendExt4
	BackendFallback  = figures.BackendFallback
	BackendAuto      = figures.BackendAuto
)

// Exceeded reports whether a tree is at or over a hard limit, or over a
// soft one past its grace, at now: what makes Check deny a run.
func Exceeded(t TreeStatus, now time.Time) bool { return figures.Exceeded(t, now) }

// AppendBackendJSON appends k's JSON, as encoding/json writes it.
func AppendBackendJSON(b []byte, k Backend) []byte { return figures.AppendBackendJSON(b, k) }
