package quota

import (
	"errors"
	"fmt"
)

// IDRange is the inclusive range project IDs are allocated from. It lives
// here, not in quota/xfs, because the store hands IDs out (in a
// transaction, against every other process) and must not depend on a
// backend.
type IDRange struct{ First, Last ProjectID }

// DefaultRange keeps clear of the small IDs people pick by hand in
// /etc/projid and of the top bit, which some tools read as a sign.
var DefaultRange = IDRange{First: 100000, Last: 1<<31 - 1}

// Validate refuses ranges that include 0 or 0xFFFFFFFF, or are empty.
func (r IDRange) Validate() error {
	switch {
	case r.First == 0:
		return errors.New("project ID range must not include 0: XFS never enforces ID 0")
	case r.Last == ^ProjectID(0):
		return errors.New("project ID range must not include 4294967295 (-1, the kernel's invalid ID)")
	case r.First > r.Last:
		return fmt.Errorf("project ID range %d-%d is empty", r.First, r.Last)
	}
	return nil
}
