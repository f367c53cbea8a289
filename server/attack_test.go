package server_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/xfsq/xfsq/internal/fixture"
)

// TestAttackAdmissionRefreshIsShared: GET …/admission?refresh=1 is a
// refresh as the overview's is, so a reader (a limited one too) asking it
// again and again within refresh_window must share one walk, not make the
// server walk a tree the tenant fills with names each time (#33 §3).
func TestAttackAdmissionRefreshIsShared(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		r.Add(10<<20, "other")
		ts := newServer(t, r)
		const path = "/v1/workspace/storage/projects/other/admission?refresh=1"
		workspaceBytes := func() float64 {
			t.Helper()
			code, _, body := ts.raw(t, http.MethodGet, path, limitedToken, "")
			var a struct {
				Trees []struct {
					Area      string  `json:"area"`
					UsedBytes float64 `json:"used_bytes"`
				} `json:"trees"`
			}
			if code != 200 || json.Unmarshal([]byte(body), &a) != nil {
				t.Fatalf("admission: %d %s", code, body)
			}
			for _, tr := range a.Trees {
				if tr.Area == "workspace" {
					return tr.UsedBytes
				}
			}
			t.Fatalf("no workspace tree in %s", body)
			return 0
		}
		before := workspaceBytes()
		// Written outside xfsq: only a walk sees it.
		if err := os.WriteFile(filepath.Join(r.Manager.Root, "projects/other/new"), make([]byte, 1<<20), 0o644); err != nil {
			t.Fatal(err)
		}
		for i := range 5 {
			if got := workspaceBytes(); got != before {
				t.Fatalf("refresh %d within refresh_window walked again: %v bytes, were %v", i+2, got, before)
			}
		}
	})
}
