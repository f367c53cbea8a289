//go:build !amd64

package inventory

import (
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Batched stats (statring_amd64.go) are amd64's: elsewhere a walk stats
// one file at a time.
type statRing struct{}

var ringBatches atomic.Int64

func getRing() *statRing  { return nil }
func putRing(r *statRing) {}
func ringGivenUp() string { return "batched stats are amd64's" }
func ringRefused() bool   { return true }

func (r *statRing) stat(dirfd int, names []*byte, sts []unix.Stat_t, errs []unix.Errno, inline func(int)) bool {
	return false
}

func (r *statRing) batch(dirfd int, names []*byte, sts []unix.Stat_t, errs []unix.Errno, meanwhile func()) bool {
	return false
}
