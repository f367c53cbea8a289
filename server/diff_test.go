package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/xfsq/xfsq/internal/testsupport/fixture"
	"github.com/xfsq/xfsq/inventory"
	"github.com/xfsq/xfsq/sandbox"
	"github.com/xfsq/xfsq/store"
)

const diffPattern = "GET /v1/workspace/storage/projects/{id}/diff"

// The diff route answers what changed from the stored snapshots, refuses
// bad parameters with 400 naming them, and a span no kept snapshot
// covers with 404.
func TestDiffEndpoint(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		r.Add(10<<20, "omni")
		now := time.Now()
		for _, s := range []struct {
			ago  time.Duration
			root *inventory.Node
		}{
			{26 * time.Hour, &inventory.Node{Path: ".", SizeBytes: 5 << 20, Children: []*inventory.Node{{Path: "src", SizeBytes: 2 << 20}, {Path: "old", SizeBytes: 3 << 20}}}},
			{time.Hour, &inventory.Node{Path: ".", SizeBytes: 9 << 20, Children: []*inventory.Node{{Path: "src", SizeBytes: 7 << 20}, {Path: "new", SizeBytes: 2 << 20}}}},
		} {
			err := sandbox.TestStore(r.Manager).InTx(r.Ctx, func(tx *store.Tx) error {
				return tx.AddSnapshot(r.Ctx, store.Snapshot{Project: "omni", Area: "workspace", At: now.Add(-s.ago), SizeBytes: s.root.SizeBytes, KernelBytes: -1},
					inventory.AppendStored(nil, s.root, nil), 35*24*time.Hour)
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		a, err := newStorageAPI(r.Root)
		if err != nil {
			t.Fatal(err)
		}
		srv := storageTestServer(t, Caller{Name: "dash", Role: RoleReader}, routes{diffPattern: answered(nil, a.Diff), projectPattern: answered(nil, a.Project)})
		growingCache(t, r, now)
		if resp, body := do(t, http.MethodGet, srv.URL+"/v1/workspace/storage/projects/omni", nil); resp.StatusCode != 200 || !strings.Contains(body, `"full_in_seconds":`) {
			t.Errorf("the detail of a project whose cache grows steadily: %d %s", resp.StatusCode, body)
		}
		url := srv.URL + "/v1/workspace/storage/projects/omni/diff"
		resp, body := do(t, http.MethodGet, url+"?since=24h&area=workspace&top=5", nil)
		var d sandbox.TreeDiff
		if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &d) != nil {
			t.Fatalf("diff: %d %s", resp.StatusCode, body)
		}
		if len(d.Grew) != 2 || d.Grew[0].Path != "src" || d.Grew[0].ChangeBytes != 5<<20 || len(d.New) != 1 || d.New[0].Path != "new" ||
			len(d.Gone) != 1 || d.Gone[0].Path != "old" || len(d.Shrank) != 1 || d.ChangeBytes != 4<<20 {
			t.Errorf("diff of a day: %s", body)
		}
		for _, bad := range []string{"since=soon", "since=-1h", "top=0", "top=x", "area=nowhere"} {
			if resp, body := do(t, http.MethodGet, url+"?"+bad, nil); resp.StatusCode != 400 || !strings.Contains(body, strings.Split(bad, "=")[0]) {
				t.Errorf("%s: %d %s", bad, resp.StatusCode, body)
			}
		}
		if resp, body := do(t, http.MethodGet, url+"?since=7d", nil); resp.StatusCode != 404 || !strings.Contains(body, "the oldest kept is from") {
			t.Errorf("a week back: %d %s", resp.StatusCode, body)
		}
	})
}

// growingCache stores 8 hourly snapshots of omni's cache growing 500 bytes an
// hour up to its usage now: a trend the detail's full-in is fitted to.
func growingCache(t *testing.T, r *fixture.Root, now time.Time) {
	t.Helper()
	mib := uint64(1 << 20) // within a span worth saying at this rate: 87 days
	if _, err := r.Manager.Set(r.Ctx, "omni", "cache", sandbox.LimitChange{BytesHard: &mib}); err != nil {
		t.Fatal(err)
	}
	_, u, _, err := sandbox.TestStore(r.Manager).Account(r.Ctx, store.TreeKey{Project: "omni", Area: "cache"})
	if err != nil {
		t.Fatal(err)
	}
	for h := 8; h >= 1; h-- {
		size := u.Bytes - uint64(h)*500
		err := sandbox.TestStore(r.Manager).InTx(r.Ctx, func(tx *store.Tx) error {
			return tx.AddSnapshot(r.Ctx, store.Snapshot{Project: "omni", Area: "cache", At: now.Add(-time.Duration(h) * time.Hour),
				SizeBytes: size, KernelBytes: -1}, inventory.AppendStored(nil, &inventory.Node{Path: ".", SizeBytes: size}, nil), 35*24*time.Hour)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
