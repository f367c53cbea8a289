package health

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xfsq/xfsq/internal/testsupport/mounttest"
)

// TestDiskPartSurvivesAStalledFUSEOnInboundAttack: the root's inbound/ is
// a tree the tenants share, and a container's mount reaching the host
// through shared propagation can land on it: a FUSE filesystem whose
// server never answers. The disk part statfs()s every area base, inbound/
// too, through that mount. The root's and the other bases' figures are
// still reported, inbound/ is named as not answering, and however many
// health answers and scrapes ask, one thread waits on it. Found by a
// hostile-tenant round, broken twice:
//   - the whole disk part was dropped at the budget (Paths nil, against
//     openapi.json's array), the root's own figures with it, so
//     xfsq_host_disk_* vanished from /metrics for as long as the tenant
//     liked: a disk filling up raised no free-space alert;
//   - each Collect (each GET /v1/system/health, each /metrics scrape)
//     left one more goroutine, and its OS thread, in statfs for good
//     (measure abandons it): at a 15 s scrape interval, Go's 10000-thread
//     limit would kill serve within two days.
func TestDiskPartSurvivesAStalledFUSEOnInboundAttack(t *testing.T) {
	root, ch := stalledInbound(t)
	const scrapes = 5
	var r Report
	for range scrapes {
		r = ch.Collect(context.Background())
	}
	if r.Disk == nil || len(r.Disk.Paths) == 0 || r.Disk.Paths[0].Path != root || r.Disk.Paths[0].TotalBytes == 0 {
		t.Errorf("with a tenant's stalled mount on inbound/, the disk part lost the root's own figures: %+v", r.Disk)
	}
	inbound := filepath.Join(root, "inbound")
	for _, p := range r.Disk.Paths {
		if (p.Path == inbound) != (p.Error != "") {
			t.Errorf("%s: error %q; want one only for inbound/, the path that does not answer", p.Path, p.Error)
		}
	}
	if r.Disk.Status != Error || !strings.Contains(r.Disk.Error, "1 of 5 paths") {
		t.Errorf("disk part %s, %q: want an error naming the one path that did not answer", r.Disk.Status, r.Disk.Error)
	}
	stuck := statfsWaiters()
	if stuck > 1 {
		t.Errorf("%d goroutines (one OS thread each) wait in statfs on the tenant's mount after %d collects: each health answer and scrape leaves one more for good", stuck, scrapes)
	}
}

// budgetChecker is a root and a checker of it with a 300 ms budget.
func budgetChecker(t *testing.T) (root string, ch *Checker) {
	root = makeRoot(t)
	ch, err := New(Options{Root: root, Budget: 300 * time.Millisecond, CPUSampleInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	return root, ch
}

// stalledInbound is budgetChecker with a tenant's FUSE mount whose server
// never answers on inbound/.
func stalledInbound(t *testing.T) (root string, ch *Checker) {
	root, ch = budgetChecker(t)
	mounttest.StalledFUSE(t, filepath.Join(root, "inbound"))
	return root, ch
}
