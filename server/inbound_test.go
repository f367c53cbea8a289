package server_test

import (
	"context"
	"strings"
	"testing"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/client"
	"github.com/xfsq/xfsq/internal/testsupport/fixture"
	"github.com/xfsq/xfsq/sandbox"
)

// TestInboundOverTheAPI: the root's inbound tree is reached as project
// _root with area inbound where the API takes an area (PATCH limits), is
// never in the overview's projects[], cannot be registered or removed as a
// project, and is swept only as _root (sweep_test.go: TestSweepAPIInbound).
func TestInboundOverTheAPI(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		ts := newServer(t, r)
		ctx := context.Background()
		op, rd := ts.client(operatorToken), ts.client(readerToken)
		if _, err := op.AddProject(ctx, "omni", client.AreaLimits{}); err != nil {
			t.Fatal(err)
		}
		hard := uint64(2 << 20)
		p, err := op.SetLimits(ctx, sandbox.RootOwner, area.Inbound, client.Limits{}.WithBytesHard(hard))
		if err != nil || len(p.Trees) != 1 || p.Trees[0].Area != area.Inbound || p.Trees[0].BytesHard != hard {
			t.Errorf("PATCH the inbound tree's limit: %v %+v", err, p)
		}
		if _, err := op.SetLimits(ctx, "omni", area.Inbound, client.Limits{}.WithBytesHard(hard)); status(err) != 400 {
			t.Errorf("PATCH omni's inbound: %v, want 400", err)
		}
		ov, err := rd.Overview(ctx, false)
		if err != nil || len(ov.Projects) != 1 || ov.Projects[0].Project != "omni" {
			t.Errorf("overview projects[]: %v %+v, want omni alone", err, ov)
		}
		for _, c := range []struct{ method, path, body string }{
			{"POST", "/v1/workspace/storage/projects", `{"project": "_root"}`},
			{"DELETE", "/v1/workspace/storage/projects/_root?purge=true&force=true", ""},
			{"POST", "/v1/workspace/storage/projects/omni/sweep", `{"dry_run": true, "areas": ["inbound"]}`},
		} {
			if code, _, body := ts.raw(t, c.method, c.path, operatorToken, c.body); code != 400 || !strings.Contains(body, "inbound") {
				t.Errorf("%s %s %s: %d %s, want 400 saying what inbound is", c.method, c.path, c.body, code, body)
			}
		}
		if trees, _ := sandbox.TestStore(r.Manager).Trees(ctx, sandbox.RootOwner); len(trees) != 1 || trees[0].Limits.BytesHard != hard {
			t.Errorf("the inbound tree after the refusals: %+v", trees)
		}
	})
}
