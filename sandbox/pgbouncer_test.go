package sandbox_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/xfsq/xfsq/internal/testsupport/fixture"
	"github.com/xfsq/xfsq/internal/testsupport/storetest"
	"github.com/xfsq/xfsq/sandbox"
)

// Three hosts behind one PgBouncer in transaction mode (two server
// connections for them all, so consecutive transactions of one host run
// on different server connections and every host's on the same ones) add
// projects, answer admission, read the report and the overview and
// snapshot, all at once: every call succeeds and answers what it did.
// This is docs/fleet.md's PgBouncer section: binary_parameters (xfsq's
// default) keeps each statement in one write, and prepare=no sends the
// hot queries unprepared, as PgBouncer before 1.21 needs.
func TestBehindPgBouncerInTransactionMode(t *testing.T) {
	dsn := storetest.PgBouncer(t) + "&prepare=no"
	first := fixture.New(t, "postgres", dsn)
	hosts := []*fixture.Root{first, first.OtherHost("host-b"), first.OtherHost("host-c")}
	var wg sync.WaitGroup
	errs := make(chan error, 1000)
	for h, r := range hosts {
		wg.Go(func() {
			for i := range 8 {
				name := fmt.Sprintf("p%d-%d", h, i)
				if _, err := r.Manager.Add(r.Ctx, name, sandbox.AddOptions{Workspace: sandbox.LimitChange{BytesHard: fixture.Size(1 << 30)}}); err != nil {
					errs <- fmt.Errorf("host %d: add %s: %w", h, name, err)
					continue
				}
				if a, err := r.Manager.Check(r.Ctx, name); err != nil || a.Project != name {
					errs <- fmt.Errorf("host %d: check %s: %+v %v", h, name, a, err)
				}
				if st, err := r.Manager.Report(r.Ctx); err != nil || len(st) < 3*(i+1) {
					errs <- fmt.Errorf("host %d: report after %d adds: %d trees, %v", h, i+1, len(st), err)
				}
				if ov, err := r.Manager.Overview(r.Ctx, sandbox.OverviewOptions{}); err != nil || len(ov.Projects) != i+1 {
					errs <- fmt.Errorf("host %d: overview after %d adds: %v", h, i+1, err)
				}
			}
			if _, err := r.Manager.Snapshot(r.Ctx, sandbox.SnapshotOptions{}); err != nil {
				errs <- fmt.Errorf("host %d: snapshot: %w", h, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
