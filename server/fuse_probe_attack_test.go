package server_test

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xfsq/xfsq/internal/testsupport/fixture"
	"github.com/xfsq/xfsq/internal/testsupport/mounttest"
)

// apiProbe returns run(method, path, body), which makes the request with
// the operator's token and fails the test if no answer has come within
// 3 s (mounttest.Probe): a handler waiting on a tenant's stalled FUSE
// server. Call it before the mounts, after the server's start.
func apiProbe(t *testing.T, ts *testServer) func(method, path, body string) {
	run := mounttest.Probe(t)
	return func(method, path, body string) {
		run(method+" "+path, func() error {
			req, _ := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
			if strings.HasPrefix(body, "{") {
				req.Header.Set("Content-Type", "application/json")
			}
			req.Header.Set("Authorization", "Bearer "+operatorToken)
			resp, err := ts.Client().Do(req)
			if err != nil {
				return err
			}
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
			resp.Body.Close()
			t.Logf("%s %s: %s %s", method, path, resp.Status, b)
			return nil
		})
	}
}

// probeEveryRoute makes the API's requests on project a (and the root's
// inbound tree): every route that reads or writes a tree.
func probeEveryRoute(run func(method, path, body string)) {
	const p = "/v1/workspace/storage/projects"
	for _, r := range []struct{ method, path, body string }{
		{"GET", "/healthz", ""},
		{"GET", "/readyz", ""},
		{"GET", p, ""},
		{"GET", "/v1/workspace/storage?refresh=1", ""},
		{"GET", "/v1/workspace/storage/summary?refresh=1", ""},
		{"GET", p + "/a?refresh=1", ""},
		{"GET", p + "/a/admission?refresh=1", ""},
		{"GET", p + "/a/diff", ""},
		{"GET", p + "/a/history", ""},
		{"GET", "/v1/workspace/storage/history", ""},
		{"GET", "/v1/workspace/storage/events", ""},
		{"GET", p + "/a/files/", ""},
		{"GET", p + "/a/files/?area=cache", ""},
		{"GET", p + "/a/files/?area=scratch", ""},
		{"GET", p + "/_root/files/?area=inbound", ""},
		{"GET", p + "/a/files/m", ""},
		{"GET", p + "/a/files/m?area=cache", ""},
		{"GET", p + "/_root/files/m?area=inbound", ""},
		{"PUT", p + "/a/files/new", "x"},
		{"PUT", p + "/a/files/new?area=cache", "x"},
		{"PUT", p + "/a/files/new?area=scratch", "x"},
		{"PUT", p + "/_root/files/new?area=inbound", "x"},
		{"PUT", p + "/a/files/m/new", "x"},
		{"DELETE", p + "/a/files/m?recursive=true", ""},
		{"DELETE", p + "/a/files/m?area=cache&recursive=true", ""},
		{"DELETE", p + "/a/files/m?area=scratch&recursive=true", ""},
		{"DELETE", p + "/_root/files/m?area=inbound&recursive=true", ""},
		{"PATCH", p + "/a", `{"bytes_hard": 67108864}`},
		{"PATCH", p + "/a", `{"area": "cache", "bytes_hard": 67108864}`},
		{"PATCH", p + "/_root", `{"area": "inbound", "bytes_hard": 67108864}`},
		{"POST", p + "/a/sweep", `{"dry_run": true}`},
		{"POST", p + "/a/sweep", `{"dry_run": false}`},
		{"POST", p + "/_root/sweep", `{"dry_run": false}`},
		{"GET", "/v1/workspace/storage/report?refresh=1&check=1", ""},
		{"GET", "/v1/system/doctor", ""},
		{"POST", "/v1/system/doctor/fix", ""},
		// GET /v1/system/health: health's TestDiskPartSurvivesAStalledFUSEOnInboundAttack.
		{"GET", "/metrics", ""},
		{"DELETE", p + "/a?purge=true&force=true&dry_run=true", ""},
		{"DELETE", p + "/a?purge=true&force=true", ""},
	} {
		run(r.method, r.path, r.body)
	}
}

// TestNoAPIRouteWaitsOnStalledFUSEMountsOnTheTrees: tenants' containers
// mount FUSE filesystems whose servers never answer on their trees' own
// directories (projects/a, cache/a, scratch/a, the shared inbound/, and
// the not yet registered c's, whose add is sandbox's
// TestAddingAProjectWhoseTreesATenantMountedOverNeverWaits), and
// the mounts reach the host through shared propagation. Every route of the
// API that reads or writes a tree answers within 3 s. Held (attack4).
func TestNoAPIRouteWaitsOnStalledFUSEMountsOnTheTrees(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		r.Add(1<<30, "a", "b")
		canary := plantOutside(t, r.Manager.Root)
		ts := newServer(t, r)
		run := apiProbe(t, ts)
		root := r.Manager.Root
		for _, d := range []string{"projects/c", "cache/c", "scratch/c"} {
			os.MkdirAll(filepath.Join(root, d), 0o755)
		}
		for _, d := range []string{"projects/a", "cache/a", "scratch/a", "inbound", "projects/c", "cache/c", "scratch/c"} {
			mounttest.StalledFUSE(t, filepath.Join(root, d))
		}
		probeEveryRoute(run)
		canary(t)
	})
}

// TestNoAPIRouteWaitsOnStalledFUSEMountsInTheTrees: as above, the mounts
// on names inside the trees (m, a directory, in each of a's trees and in
// inbound/; uploads/ of the workspace). Held (attack4).
func TestNoAPIRouteWaitsOnStalledFUSEMountsInTheTrees(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		r.Add(1<<30, "a", "b")
		canary := plantOutside(t, r.Manager.Root)
		ts := newServer(t, r)
		run := apiProbe(t, ts)
		root := r.Manager.Root
		var at []string
		for _, d := range []string{"projects/a/m", "projects/a/uploads", "cache/a/m", "scratch/a/m", "inbound/m", "projects/c/m"} {
			os.MkdirAll(filepath.Join(root, d), 0o755)
			at = append(at, filepath.Join(root, d))
		}
		os.WriteFile(filepath.Join(root, "cache/a/f"), []byte("x"), 0o644)
		for _, d := range at {
			mounttest.StalledFUSE(t, d)
		}
		probeEveryRoute(run)
		canary(t)
	})
}

// plantOutside writes a file beside the root (outside it) and returns a
// check that it is unchanged.
func plantOutside(t *testing.T, root string) func(t *testing.T) {
	p := filepath.Join(filepath.Dir(root), "canary-"+filepath.Base(root))
	os.WriteFile(p, []byte("canary"), 0o644)
	return func(t *testing.T) {
		if b, err := os.ReadFile(p); err != nil || string(b) != "canary" {
			t.Errorf("the file outside the root changed: %q %v", b, err)
		}
	}
}
