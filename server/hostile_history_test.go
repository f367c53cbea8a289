package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xfsq/xfsq/internal/testsupport/fixture"
	"github.com/xfsq/xfsq/sandbox"
)

// TestHostileHistoryRequests sends the history routes what a tenant or a
// hostile page would: point counts and windows past sense (negative,
// zero, huge, not numbers, overflowing), a project named by an encoded
// path, by case, and a project of another host of the fleet sharing the
// store, as each kind of caller. None answers 5xx; a bad parameter is a
// 400 naming it; a limited reader learns nothing of omni (what it is told
// of omni is what it is told of a project that does not exist); another
// host's project is not found here and its snapshots never appear in the
// same-named project's history; nothing outside a project changes (the
// canary) and the other project's file stays.
func TestHostileHistoryRequests(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		r.Add(10<<20, "omni", "other")
		remote := r.OtherHost("remote-host")
		remote.Add(10<<20, "other", "faraway")
		// The remote host's "other" is far larger than this host's: a
		// history that mixed the two would show it.
		if err := os.WriteFile(filepath.Join(remote.Manager.Root, "projects/other/big"), make([]byte, 3<<20), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, m := range []*sandbox.Manager{r.Manager, remote.Manager} {
			if _, err := m.Snapshot(r.Ctx, sandbox.SnapshotOptions{Scheduled: true}); err != nil {
				t.Fatal(err)
			}
		}
		ts := newServer(t, r)
		canary := newCanary(t, r.Manager.Root)
		secret := filepath.Join(r.Manager.Root, "projects/other/kept.txt")
		if err := os.WriteFile(secret, []byte("OTHER-FILE"), 0o600); err != nil {
			t.Fatal(err)
		}
		const p = "/v1/workspace/storage/projects"
		long := strings.Repeat("9", 5000)
		bad := []string{
			"points=-1", "points=0", "points=1", "points=10001", "points=99999999999999999999", "points=" + long,
			"points=abc", "points=1e3", "points=0x10", "points=2.5", "points=%00", "points=2&points=-1",
			"since=-1h", "since=0s", "since=-0s", "since=9999999999999999999d", "since=213504d", "since=1e999",
			"since=NaN", "since=abc", "since=" + long, "since=1h%00", "since=P1D", "since=1h&since=-1h",
		}
		good := []string{"", "points=2", "points=10000", "since=1s", "since=106751d", "since=35d&points=3"}
		for _, who := range []string{"limited", "reader", "operator"} {
			token := map[string]string{"reader": readerToken, "limited": limitedToken, "operator": operatorToken}[who]
			for _, base := range []string{p + "/other/history", "/v1/workspace/storage/history"} {
				for _, q := range append(append([]string{}, bad...), good...) {
					path := base + "?" + q
					status, _, body := ts.raw(t, "GET", path, token, "")
					name := fmt.Sprintf("GET %s as %s", shorten(path), who)
					isBad := false
					for _, b := range bad {
						isBad = isBad || b == q
					}
					switch {
					case status >= 500:
						t.Errorf("%s: %d %s", name, status, shorten(body))
					case isBad && status != http.StatusBadRequest:
						t.Errorf("%s: %d %s; want 400", name, status, shorten(body))
					case isBad && !strings.Contains(body, strings.SplitN(q, "=", 2)[0]):
						t.Errorf("%s: the 400 does not name the parameter: %s", name, shorten(body))
					case !isBad && status != http.StatusOK:
						t.Errorf("%s: %d %s; want 200", name, status, shorten(body))
					}
					canary.check(t, name)
				}
			}
			// Projects named past sense, and others' projects.
			for _, id := range []string{"omni", "other%2F..%2Fomni", "OMNI", "%6Fmni", "faraway", "nosuch", "..", "%2E%2E", long} {
				path := p + "/" + id + "/history"
				status, _, body := ts.raw(t, "GET", path, token, "")
				name := fmt.Sprintf("GET %s as %s", shorten(path), who)
				if status >= 500 {
					t.Errorf("%s: %d %s", name, status, shorten(body))
				}
				if who == "limited" && status < 300 && strings.Contains(body, "omni") {
					t.Errorf("%s: %d gives a reader limited to other something of omni: %s", name, status, shorten(body))
				}
				if id == "faraway" && status != http.StatusNotFound {
					t.Errorf("%s: %d %s; another host's project is not found here", name, status, shorten(body))
				}
				canary.check(t, name)
			}
			if who == "limited" {
				seen, _, a := ts.raw(t, "GET", p+"/omni/history", token, "")
				none, _, b := ts.raw(t, "GET", p+"/nosuch/history", token, "")
				if seen != none || strings.ReplaceAll(a, "omni", "nosuch") != b {
					t.Errorf("a limited reader tells omni's history from a project that does not exist: %d %s / %d %s", seen, a, none, b)
				}
			}
		}
		// This host's "other" holds no snapshot of the remote host's.
		status, _, body := ts.raw(t, "GET", p+"/other/history", operatorToken, "")
		var h struct {
			Trees []struct {
				Area   string `json:"area"`
				Points []struct {
					Bytes uint64 `json:"bytes"`
				} `json:"points"`
			} `json:"trees"`
		}
		if status != http.StatusOK || json.Unmarshal([]byte(body), &h) != nil {
			t.Fatalf("other's history: %d %s", status, shorten(body))
		}
		points := 0
		for _, tr := range h.Trees {
			for _, pt := range tr.Points {
				points++
				if pt.Bytes >= 3<<20 {
					t.Errorf("other's %s history holds a point of %d bytes: the remote host's same-named project's", tr.Area, pt.Bytes)
				}
			}
		}
		if points == 0 {
			t.Errorf("other's history has no point: the check above tests nothing (%s)", shorten(body))
		}
		if b, err := os.ReadFile(secret); err != nil || string(b) != "OTHER-FILE" {
			t.Errorf("other's file is now %q (%v)", b, err)
		}
	})
}
