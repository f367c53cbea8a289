package server

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/internal/testsupport/fixture"
	"github.com/xfsq/xfsq/sandbox"
)

const (
	overviewPattern = "GET /v1/workspace/storage"
	projectPattern  = "GET /v1/workspace/storage/projects/{id}"
)

func storageRoutes(t *testing.T, r *fixture.Root) routes {
	a, err := newStorageAPI(r.Root)
	if err != nil {
		t.Fatal(err)
	}
	return routes{overviewPattern: answered(nil, a.Overview), projectPattern: answered(nil, a.Project)}
}

// TestOverviewEndpoint: the overview's shape, its ETag and 304, a limited
// reader's own view (names and tag), and ?refresh=1.
func TestOverviewEndpoint(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		r.Add(10<<20, "omni", "beta")
		os.WriteFile(filepath.Join(r.Manager.Root, "projects/omni/data"), make([]byte, 1<<20), 0o644)
		if _, err := r.Manager.Snapshot(r.Ctx, sandbox.SnapshotOptions{}); err != nil {
			t.Fatal(err)
		}
		rs := storageRoutes(t, r)
		all := storageTestServer(t, Caller{Name: "dash", Role: RoleReader}, rs)
		limited := storageTestServer(t, Caller{Name: "omni-ci", Role: RoleReader, Projects: []string{"omni"}}, rs)
		url := func(srv string) string { return srv + "/v1/workspace/storage" }

		resp, body := do(t, http.MethodGet, url(all.URL), nil)
		var ov map[string]any
		if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &ov) != nil {
			t.Fatalf("overview: %d %s", resp.StatusCode, body)
		}
		for _, k := range []string{"generated_at", "root", "host", "backend", "disk", "projects"} {
			if _, ok := ov[k]; !ok {
				t.Errorf("no %q in %s", k, body)
			}
		}
		projects := ov["projects"].([]any)
		omni := projects[0].(map[string]any)
		// usage_as_of: the fixture's root is the fallback, whose figures
		// start from a walk (on XFS the kernel's are of now, and it is left out).
		for _, k := range []string{"project", "workspace_bytes", "workspace_files", "cache_bytes", "quota_bytes", "quota_used", "quota_soft_bytes", "top_paths", "growth", "last_activity_at", "usage_as_of"} {
			if _, ok := omni[k]; !ok {
				t.Errorf("no %q in a project: %v", k, omni)
			}
		}
		if len(projects) != 2 || !strings.Contains(body, `"top_paths":[{"path":"data","bytes":`) || !strings.Contains(body, `"growth":{"24h":null,"7d":null}`) {
			t.Errorf("overview: %s", body)
		}
		etag := resp.Header.Get("ETag")
		resp, body = do(t, http.MethodGet, url(all.URL), nil, "If-None-Match", etag)
		if resp.StatusCode != http.StatusNotModified || body != "" || resp.Header.Get("ETag") != etag {
			t.Errorf("If-None-Match: %d %q", resp.StatusCode, body)
		}

		resp, body = do(t, http.MethodGet, url(limited.URL), nil)
		if resp.StatusCode != 200 || !strings.Contains(body, `"omni"`) || strings.Contains(body, "beta") || resp.Header.Get("ETag") == etag {
			t.Errorf("a limited reader's overview: %d %s", resp.StatusCode, body)
		}
		resp, _ = do(t, http.MethodGet, url(limited.URL), nil, "If-None-Match", etag)
		if resp.StatusCode != 200 {
			t.Errorf("a limited reader revalidated against the full view's tag: %d", resp.StatusCode)
		}

		// A change in the store shows at once, with another tag.
		r.Add(1<<20, "gamma")
		resp, body = do(t, http.MethodGet, url(all.URL), nil, "If-None-Match", etag)
		if resp.StatusCode != 200 || !strings.Contains(body, "gamma") {
			t.Errorf("after a project was added: %d %s", resp.StatusCode, body)
		}
		os.WriteFile(filepath.Join(r.Manager.Root, "projects/beta/more"), make([]byte, 2<<20), 0o644)
		resp, body = do(t, http.MethodGet, url(all.URL)+"?refresh=1", nil)
		if resp.StatusCode != 200 || !strings.Contains(body, `{"path":"more","bytes":`) {
			t.Errorf("refresh: %d %s", resp.StatusCode, body)
		}
		resp, body = do(t, http.MethodGet, url(all.URL)+"?refresh=yes", nil)
		if resp.StatusCode != 400 || !strings.Contains(body, "refresh") {
			t.Errorf("a bad ?refresh: %d %s", resp.StatusCode, body)
		}
	})
}

// TestProjectEndpoint: a project's trees from its last snapshot, to the
// depth asked, a bad depth refused naming it, and what a project never
// snapshotted shows.
func TestProjectEndpoint(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		r.Add(10<<20, "omni", "beta")
		os.MkdirAll(filepath.Join(r.Manager.Root, "projects/omni/a/b/c/d"), 0o755)
		os.WriteFile(filepath.Join(r.Manager.Root, "projects/omni/a/b/c/d/f"), make([]byte, 64<<10), 0o644)
		if _, err := r.Manager.Snapshot(r.Ctx, sandbox.SnapshotOptions{Projects: []string{"omni"}}); err != nil {
			t.Fatal(err)
		}
		srv := storageTestServer(t, Caller{Name: "dash", Role: RoleReader, Projects: []string{"omni", "beta"}}, storageRoutes(t, r))
		url := srv.URL + "/v1/workspace/storage/projects/"
		var d sandbox.ProjectStorage
		workspace := func() sandbox.TreeStorage {
			for _, tr := range d.Trees {
				if tr.Area == area.Workspace {
					return tr
				}
			}
			t.Fatalf("no workspace tree: %+v", d)
			return sandbox.TreeStorage{}
		}
		resp, body := do(t, http.MethodGet, url+"omni", nil)
		if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &d) != nil {
			t.Fatalf("detail: %d %s", resp.StatusCode, body)
		}
		ws := workspace()
		if ws.Tree == nil || ws.SnapshotAt == nil || len(ws.TopFiles) != 1 || ws.TopFiles[0].Path != "a/b/c/d/f" || ws.BytesHard != 10<<20 ||
			!strings.Contains(body, `"path":"a/b/c"`) || strings.Contains(body, `"path":"a/b/c/d"`) {
			t.Errorf("detail at the default depth: %s", body)
		}
		resp, body = do(t, http.MethodGet, url+"omni?depth=1", nil)
		if resp.StatusCode != 200 || !strings.Contains(body, `"path":"a"`) || strings.Contains(body, `"path":"a/b"`) {
			t.Errorf("depth=1: %d %s", resp.StatusCode, body)
		}
		for _, bad := range []string{"abc", "0", "-1", "9", "3.5"} {
			resp, body := do(t, http.MethodGet, url+"omni?depth="+bad, nil)
			if resp.StatusCode != 400 || !strings.Contains(body, `depth`) {
				t.Errorf("depth=%s: %d %s", bad, resp.StatusCode, body)
			}
		}
		resp, body = do(t, http.MethodGet, url+"beta", nil)
		d = sandbox.ProjectStorage{}
		if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &d) != nil || workspace().Tree != nil || !strings.Contains(body, `"tree":null`) ||
			!strings.Contains(body, `"snapshot_at":null`) || workspace().UsedBytes == 0 {
			t.Errorf("a project never snapshotted: %d %s", resp.StatusCode, body)
		}
		resp, body = do(t, http.MethodGet, url+"gone", nil)
		if resp.StatusCode != 404 {
			t.Errorf("a project the caller may not see: %d %s", resp.StatusCode, body)
		}
	})
}

// TestOverviewETag: the validator ignores when the overview was assembled
// and follows every figure, so a poll of an unchanged root gets 304.
func TestOverviewETag(t *testing.T) {
	a := &sandbox.Overview{GeneratedAt: time.Unix(1, 0), Root: "/srv", Projects: []sandbox.ProjectOverview{{Project: "omni", WorkspaceBytes: 1}}}
	b := *a
	b.GeneratedAt = time.Unix(2, 0)
	c := *a
	c.Projects = []sandbox.ProjectOverview{{Project: "omni", WorkspaceBytes: 2}}
	_, ta, _ := encodeTagged(a)
	_, tb, _ := encodeTagged(&b)
	_, tc, _ := encodeTagged(&c)
	if ta != tb || ta == tc || !etagMatches(tb, ta) || etagMatches(ta, tc) || !etagMatches(`"x", `+ta, ta) {
		t.Errorf("tags %s %s %s", ta, tb, tc)
	}
}

// A server warmed at start has the overview encoded before any request:
// the first readers get bytes, they do not queue behind an assembly and
// an encoding.
func TestWarmEncodesTheOverviewBeforeAnyRequest(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		r.Add(10<<20, "omni", "beta")
		s, err := New(Config{Root: r.Root, Tokens: tokens{"warm-test-token-0123456789": operator}})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Warm(r.Ctx); err != nil {
			t.Fatal(err)
		}
		ov, err := r.Manager.Overview(r.Ctx, sandbox.OverviewOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s.storage.mu.Lock()
		encoded, body := s.storage.overview.of, s.storage.overview.body
		s.storage.mu.Unlock()
		if encoded != ov || !strings.Contains(string(body), `"project":"beta"`) {
			t.Errorf("after Warm the kept encoding is of %p (%d bytes), want the current overview %p with both projects", encoded, len(body), ov)
		}
	})
}

// TestOverviewRefreshIsScoped: ?refresh=1 by a reader limited to one
// project walks that project's trees only, and asked again (in turn or at
// once) within refresh_window it shares the walk: a file written since is
// not seen until a refresh of another scope walks.
func TestOverviewRefreshIsScoped(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		r.Add(10<<20, "omni", "beta")
		rs := storageRoutes(t, r)
		all := storageTestServer(t, Caller{Name: "dash", Role: RoleReader}, rs)
		limited := storageTestServer(t, Caller{Name: "omni-ci", Role: RoleReader, Projects: []string{"omni"}}, rs)
		snapshotted := func(name string) bool {
			d, err := r.Manager.ProjectStorage(r.Ctx, name, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, tr := range d.Trees {
				if tr.SnapshotAt != nil {
					return true
				}
			}
			return false
		}
		workspaceBytes := func(srv, name string) float64 {
			t.Helper()
			resp, body := do(t, http.MethodGet, srv+"/v1/workspace/storage?refresh=1", nil)
			var ov struct {
				Projects []map[string]any `json:"projects"`
			}
			if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &ov) != nil {
				t.Fatalf("refresh: %d %s", resp.StatusCode, body)
			}
			for _, p := range ov.Projects {
				if p["project"] == name {
					return p["workspace_bytes"].(float64)
				}
			}
			t.Fatalf("no %s in %s", name, body)
			return 0
		}
		before := workspaceBytes(limited.URL, "omni")
		if !snapshotted("omni") || snapshotted("beta") {
			t.Errorf("a refresh by omni's reader: omni walked %v, beta walked %v; want omni only", snapshotted("omni"), snapshotted("beta"))
		}
		os.WriteFile(filepath.Join(r.Manager.Root, "projects/omni/new"), make([]byte, 1<<20), 0o644)
		var wg sync.WaitGroup
		for range 10 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if got := workspaceBytes(limited.URL, "omni"); got != before {
					t.Errorf("a refresh within refresh_window walked again: %v bytes, were %v", got, before)
				}
			}()
		}
		wg.Wait()
		if after := workspaceBytes(all.URL, "omni"); after < before+1<<20 || !snapshotted("beta") {
			t.Errorf("a refresh of every tree: omni %v bytes (were %v), beta walked %v", after, before, snapshotted("beta"))
		}
	})
}
