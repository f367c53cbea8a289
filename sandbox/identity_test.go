package sandbox_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/internal/testsupport/storetest"
	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/sandbox"
	"github.com/xfsq/xfsq/store"
)

// openAs opens root on dsn under host, as a command would (init when init).
func openAs(t *testing.T, root, dsn, host string, init bool) (*sandbox.Root, error) {
	t.Helper()
	r, err := sandbox.OpenRoot(context.Background(), sandbox.Config{Root: root, DSN: dsn, Host: host, ProjectFiles: []string{}, Init: init})
	if err == nil {
		t.Cleanup(func() { r.Close() })
	}
	return r, err
}

func mustOpenAs(t *testing.T, root, dsn, host string, init bool) *sandbox.Root {
	t.Helper()
	r, err := openAs(t, root, dsn, host, init)
	if err != nil {
		t.Fatalf("open %s as %s: %v", root, host, err)
	}
	return r
}

// sharedStore is one store for several roots: PostgreSQL's, or a SQLite
// file outside every root.
func sharedStore(t *testing.T, driver storetest.Driver) string {
	return driver.DSN(t)
}

// listing is every path under dir, for "nothing was made".
func listing(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, _ os.DirEntry, err error) error {
		out = append(out, p)
		return nil
	})
	return out
}

func hostEvents(t *testing.T, r *sandbox.Root, typ journal.Type) []sandbox.Event {
	t.Helper()
	page, err := r.Manager.Events(context.Background(), sandbox.EventQuery{Type: string(typ), Limit: sandbox.MaxEventLimit})
	if err != nil {
		t.Fatal(err)
	}
	return page.Events
}

// The attacks: a root opened under another root's host name is
// refused, naming both and the fix, before anything of that host is read,
// written or journalled; a new root may take a host name over only when
// the operator says so, and that is journalled.
func TestRootBoundToItsHost(t *testing.T) {
	for _, d := range storetest.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			dsn := sharedStore(t, d)
			a, b, c := t.TempDir(), t.TempDir(), t.TempDir()
			mustOpenAs(t, a, dsn, "host-a", true)
			rb := mustOpenAs(t, b, dsn, "host-b", true)
			mustOpenAs(t, c, dsn, "host-c", true)
			if _, err := rb.Manager.Add(context.Background(), "omni", sandbox.AddOptions{}); err != nil {
				t.Fatal(err)
			}
			before := len(hostEvents(t, rb, ""))

			// --root A --host host-b snapshot: A is host-a's.
			_, err := openAs(t, a, dsn, "host-b", false)
			if errkind.Of(err) != errkind.Conflict || !strings.Contains(err.Error(), `bound to host "host-a"`) || !strings.Contains(err.Error(), `not to host "host-b"`) ||
				!strings.Contains(errkind.HintOf(err), "host-a") {
				t.Errorf("root A under host-b: %v (hint %q); want a conflict naming host-a, host-b and the fix", err, errkind.HintOf(err))
			}
			// --root C --host host-b doctor --fix: nothing made in C, nothing journalled.
			cBefore := listing(t, c)
			if _, err := openAs(t, c, dsn, "host-b", false); errkind.Of(err) != errkind.Conflict {
				t.Errorf("root C under host-b: %v, want a conflict", err)
			}
			if got := listing(t, c); !slices.Equal(got, cBefore) {
				t.Errorf("root C changed under a refused open: %v, was %v", got, cBefore)
			}
			if n := len(hostEvents(t, rb, "")); n != before {
				t.Errorf("host-b's journal grew from %d to %d records under a refused open", before, n)
			}

			// A new root claiming host-b: refused, with nothing made, unless it takes over.
			dnew := t.TempDir()
			_, err = openAs(t, dnew, dsn, "host-b", true)
			if errkind.Of(err) != errkind.Conflict || !strings.Contains(err.Error(), b) || !strings.Contains(errkind.HintOf(err), "take_over_host") {
				t.Errorf("a new root under host-b: %v (hint %q); want a conflict naming %s and the takeover", err, errkind.HintOf(err), b)
			}
			if entries, _ := os.ReadDir(dnew); len(entries) != 0 {
				t.Errorf("a refused init made %v", entries)
			}
			rd, err := sandbox.OpenRoot(context.Background(), sandbox.Config{Root: dnew, DSN: dsn, Host: "host-b", ProjectFiles: []string{}, Init: true, TakeOverHost: true})
			if err != nil {
				t.Fatalf("takeover: %v", err)
			}
			defer rd.Close()
			var took *journal.RootBound
			for _, e := range hostEvents(t, rd, journal.TypeRootBound) {
				if p, err := e.Decode(); err == nil && p.(journal.RootBound).Why == "takeover" {
					p := p.(journal.RootBound)
					took = &p
				}
			}
			if took == nil || took.TookFrom == nil || took.TookFrom.Root != b || took.Root != dnew {
				t.Errorf("the takeover's record: %+v", took)
			}
			if _, err := openAs(t, b, dsn, "host-b", false); errkind.Of(err) != errkind.Conflict {
				t.Errorf("the old root under the name taken from it: %v, want a conflict", err)
			}
		})
	}
}

// Two hosts whose roots have the same path (each on its own machine, here
// one after the other) draw project IDs from sequences of their own: the
// fallback registry is keyed by the root's identity, not its path.
func TestSameRootPathTwoHostsIndependentIDs(t *testing.T) {
	for _, d := range storetest.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			dsn := sharedStore(t, d)
			path := filepath.Join(t.TempDir(), "sandbox")
			ids := map[string][]uint32{}
			for _, host := range []string{"h1", "h2"} {
				if err := os.Mkdir(path, 0o755); err != nil {
					t.Fatal(err)
				}
				// The fallback's registry, chosen so even where the temporary
				// directory's filesystem enforces project quotas.
				r, err := sandbox.OpenRoot(context.Background(), sandbox.Config{Root: path, DSN: dsn, Host: host,
					ProjectFiles: []string{}, Init: true, Backend: sandbox.BackendFallback})
				if err != nil {
					t.Fatalf("init %s as %s: %v", path, host, err)
				}
				t.Cleanup(func() { r.Close() })
				if _, err := r.Manager.Add(context.Background(), "omni", sandbox.AddOptions{}); err != nil {
					t.Fatal(err)
				}
				trees, err := sandbox.TestStore(r.Manager).Trees(context.Background(), "")
				if err != nil {
					t.Fatal(err)
				}
				for _, tr := range trees {
					ids[host] = append(ids[host], uint32(tr.ProjectID))
				}
				r.Close()
				if err := os.Rename(path, path+"."+host); err != nil { // the next machine's root at the same path
					t.Fatal(err)
				}
			}
			if !slices.Equal(ids["h1"], ids["h2"]) {
				t.Errorf("project IDs at one path on two hosts: %v and %v; want each host's own sequence (the same IDs)", ids["h1"], ids["h2"])
			}
		})
	}
}

// A root of an older xfsq (no identity, no binding) gets both on its first
// open by a binary that can write, keeping its projects and journal.
func TestRootWithoutIdentityIsBoundOnOpen(t *testing.T) {
	for _, d := range storetest.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			dsn := sharedStore(t, d)
			root := t.TempDir()
			r := mustOpenAs(t, root, dsn, "old-host", true)
			if _, err := r.Manager.Add(context.Background(), "omni", sandbox.AddOptions{}); err != nil {
				t.Fatal(err)
			}
			r.Close()
			// As an older xfsq left it.
			idFile := filepath.Join(root, sandbox.StateDir, "root-id")
			if err := os.Remove(idFile); err != nil {
				t.Fatal(err)
			}
			execSQL(t, d.Name, dsn, `DELETE FROM roots`)
			again := mustOpenAs(t, root, dsn, "old-host", false)
			if data, err := os.ReadFile(idFile); err != nil || strings.TrimSpace(string(data)) != again.Manager.RootID() {
				t.Errorf("the root's identity after the open: %q %v, want %s", data, err, again.Manager.RootID())
			}
			if p, err := sandbox.TestStore(again.Manager).Project(context.Background(), "omni"); err != nil || p.State != store.StateReady {
				t.Errorf("the project after the upgrade: %+v %v", p, err)
			}
			var why []string
			for _, e := range hostEvents(t, again, journal.TypeRootBound) {
				p, err := e.Decode()
				if err != nil {
					t.Fatal(err)
				}
				why = append(why, p.(journal.RootBound).Why)
			}
			if !slices.Equal(why, []string{"upgrade", "init"}) { // newest first
				t.Errorf("root.bound records: %v, want init's then the upgrade's", why)
			}
			if _, err := openAs(t, root, dsn, "other-host", false); !errors.Is(err, err) || errkind.Of(err) != errkind.Conflict {
				t.Errorf("the upgraded root under another name: %v, want a conflict", err)
			}
		})
	}
}

// With PostgreSQL, a host name taken from the OS is said.
func TestDefaultHostNamedOnPostgres(t *testing.T) {
	dsn := storetest.Postgres(t)
	root := t.TempDir()
	r, err := sandbox.OpenRoot(context.Background(), sandbox.Config{Root: root, DSN: dsn, ProjectFiles: []string{}, Init: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	host, _ := os.Hostname()
	if !slices.ContainsFunc(r.Init.Notes, func(n string) bool { return strings.Contains(n, "no host name was given") && strings.Contains(n, host) }) {
		t.Errorf("init's notes %q do not say the host name was the hostname %q", r.Init.Notes, host)
	}
	again, err := sandbox.OpenRoot(context.Background(), sandbox.Config{Root: root, DSN: dsn, ProjectFiles: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if !strings.Contains(again.Note, "no host name was given") {
		t.Errorf("a command's note %q does not say the host name was the hostname", again.Note)
	}
}

// execSQL runs a statement on the store dsn names, behind xfsq's back.
func execSQL(t *testing.T, driver, dsn, stmt string) {
	t.Helper()
	name := "postgres"
	if driver == "sqlite" {
		name, dsn = "sqlite", "file:"+dsn
	}
	db, err := sql.Open(name, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(stmt); err != nil {
		t.Fatal(err)
	}
}
