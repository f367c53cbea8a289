package health

import (
	"bytes"
	"context"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/xfsq/xfsq/internal/testsupport/mounttest"
)

// TestDiskPartSurvivesAStalledFUSEOnInboundAttack: the root's inbound/ is
// a tree the tenants share, and a container's mount reaching the host
// through shared propagation can land on it: a FUSE filesystem whose
// server never answers. The disk part statfs()s every area base, inbound/
// too, through that mount. Broken, twice:
//   - the whole disk part is dropped at the budget (Paths nil, against
//     openapi.json's array), the root's own figures with it, so
//     xfsq_host_disk_* vanish from /metrics for as long as the tenant
//     likes: a disk filling up raises no free-space alert;
//   - each Collect (each GET /v1/system/health, each /metrics scrape)
//     leaves one more goroutine, and its OS thread, in statfs for good
//     (measure abandons it): at a 15 s scrape interval, Go's 10000-thread
//     limit kills serve within two days.
func TestDiskPartSurvivesAStalledFUSEOnInboundAttack(t *testing.T) {
	root := makeRoot(t)
	ch, err := New(Options{Root: root, Budget: 300 * time.Millisecond, CPUSampleInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	mounttest.StalledFUSE(t, filepath.Join(root, "inbound"))
	const scrapes = 5
	var r Report
	for range scrapes {
		r = ch.Collect(context.Background())
	}
	if r.Disk == nil || len(r.Disk.Paths) == 0 || r.Disk.Paths[0].Path != root || r.Disk.Paths[0].TotalBytes == 0 {
		t.Errorf("with a tenant's stalled mount on inbound/, the disk part lost the root's own figures: %+v", r.Disk)
	}
	var b bytes.Buffer
	pprof.Lookup("goroutine").WriteTo(&b, 2)
	stuck := 0
	for _, g := range strings.Split(b.String(), "\n\n") {
		if strings.Contains(g, "diskCollector).collect") {
			stuck++
		}
	}
	if stuck > 1 {
		t.Errorf("%d goroutines (one OS thread each) wait in statfs on the tenant's mount after %d collects: each health answer and scrape leaves one more for good", stuck, scrapes)
	}
}
