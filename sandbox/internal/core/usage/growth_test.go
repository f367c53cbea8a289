package usage

import (
	"testing"

	"github.com/xfsq/xfsq/store"
)

func TestWalkDisagrees(t *testing.T) {
	for _, c := range []struct {
		walk    uint64
		kernel  int64
		partial bool
		want    bool
	}{
		{1000, 1000, false, false},
		{1010, 1000, false, false}, // 1 % of the larger: not more
		{1011, 1000, false, true},  // files carry another project ID
		{1000, 1011, false, true},  // the kernel counts more than the walk saw
		{2000, 1000, true, false},  // a partial walk proves nothing
		{2000, -1, false, false},   // no kernel count (the fallback)
		{0, 0, false, false},
		{1, 0, false, true},
	} {
		s := store.Snapshot{SizeBytes: c.walk, KernelBytes: c.kernel, Partial: c.partial}
		if got := WalkDisagrees(s); got != c.want {
			t.Errorf("walk %d, kernel %d, partial %v: %v, want %v", c.walk, c.kernel, c.partial, got, c.want)
		}
	}
}
