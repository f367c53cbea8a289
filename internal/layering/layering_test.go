package layering

import (
	"bytes"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/xfsq/xfsq/internal/testsupport/prereq"
)

// pending are imports a rule forbids that are still to be removed, each
// with why; the test says when one is gone, so the line can go too.
var pending = map[string]string{}

func TestImportRules(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		prereq.Missing(t, "the import rules are read with go list: install Go")
	}
	statSources(t, "../..")
	out, err := exec.Command("go", "list", "-json", Module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	graph := map[string][]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		from := rel(p.ImportPath)
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, Module+"/") {
				graph[from] = append(graph[from], rel(imp))
			}
		}
	}
	if len(graph["cmd/xfsq"]) == 0 {
		t.Fatalf("go list found no imports of cmd/xfsq: the test sees nothing (%d packages)", len(graph))
	}
	// The rules name the use cases by where they sit; each must be there,
	// standing on the core, for the rules to hold anything of it.
	for _, uc := range useCases {
		if !slices.Contains(graph[uc], core) {
			t.Errorf("%s does not import %s: is it still a use case beside the core? update useCases", uc, core)
		}
	}
	for _, v := range Violations(graph, pending) {
		t.Error(v)
	}
	for edge := range pending {
		from, to, _ := strings.Cut(edge, " -> ")
		found := false
		for _, imp := range graph[from] {
			found = found || imp == to
		}
		if !found {
			t.Logf("pending exception %q is no longer needed: delete it from pending", edge)
		}
	}
}

// statSources stats every Go file of the module: go test caches a result
// by the files the test itself opened, and go list's reads are not among
// them, so without this a new import would pass on a cached result.
func statSources(t *testing.T, root string) {
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && p != root {
			return filepath.SkipDir
		}
		if strings.HasSuffix(p, ".go") {
			_, err = os.Stat(p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func rel(p string) string { return strings.TrimPrefix(p, Module+"/") }

// TestRules holds each rule against the import that would break it,
// cmd/xfsq importing store as it did before the composition root moved
// into the library among them.
func TestRules(t *testing.T) {
	for _, c := range []struct {
		from, to string
		broken   bool
	}{
		{"cmd/xfsq", "store", true},
		{"cmd/xfsq", "quota/xfs", true},
		{"cmd/xfsq", "quota/xfs/quotactl", true},
		{"server", "store", true},
		{"server", "daemon", true},
		{"sandbox", "internal/testsupport/fixture", true},
		{"cmd/xfsq", "internal/testsupport/prereq", true},
		// cmd/xfsq/internal: the CLI's machinery, narrower than the CLI.
		{"cmd/xfsq/internal/textout", "sandbox", false},
		{"cmd/xfsq/internal/reportcols", "cmd/xfsq/internal/textout", false},
		{"cmd/xfsq/internal/cliwords", "errkind", false},
		{"cmd/xfsq/internal/follow", "journal", false},
		{"cmd/xfsq/internal/textout", "internal/safetext", false},
		{"cmd/xfsq/internal/follow", "store", true},
		{"cmd/xfsq/internal/follow", "store/journal", true},
		{"cmd/xfsq/internal/textout", "quota/xfs", true},
		{"cmd/xfsq/internal/textout", "quota/fallback", true},
		{"cmd/xfsq/internal/textout", "quota", true},
		{"cmd/xfsq/internal/cliargs", "server", true},
		{"cmd/xfsq/internal/cliargs", "daemon", true},
		{"cmd/xfsq/internal/cliargs", "health", true},
		{"cmd/xfsq/internal/cliargs", "sandbox/internal/core", true},
		{"cmd/xfsq", "quota/fallback", true},
		{"server", "quota/fallback", true},
		{"internal/testsupport/fixture", "internal/testsupport/storetest", false},
		{"internal/testsupport/fixture", "sandbox", false},
		{"daemon", "server", false},
		{"daemon", "store", true},
		{"sandbox", "daemon", true},
		{"sandbox", "cmd/xfsq", true},
		{"sandbox", "server", true},
		{"store", "sandbox", true},
		{"store", "errkind", true},
		{"files", "store", true},
		{"client", "sandbox", true},
		{"client", "health", true},
		{"client", "units", true},
		{"api/v1", "sandbox", true},
		{"api/v1", "errkind", true},
		{"client", "api/v1", false},
		{"api/v1", "units", false},
		{"server", "api/v1", false},
		// The library answers the wire's types where the shapes are one.
		{"sandbox/internal/core", "api/v1", false},
		{"sandbox/internal/readmodel", "api/v1", false},
		{"sandbox/internal/fleet", "api/v1", false},
		{"sandbox/internal/lifecycle", "api/v1", false},
		{"files", "api/v1", false},
		{"api/v1", "files", true},
		{"health", "api/v1", false},
		{"api/v1", "sandbox/internal/core", true},
		{"api/v1", "health", true},
		{"journal", "units", true},
		{"journal", "quota", true},
		{"cmd/xfsq", "sandbox", false},
		{"cmd/xfsq", "quota", false},
		{"server", "sandbox", false},
		{"store", "quota", false},
		{"store", "journal", false},
		// store's areas: its own, beneath its one face.
		{"store", "store/internal/base", false},
		{"store", "store/internal/sweeps", false},
		{"store/internal/eventlog", "store/internal/base", false},
		{"store/internal/walks", "quota", false},
		{"store/internal/walks", "journal", false},
		{"store/internal/base", "errkind", true},
		{"store/internal/registry", "sandbox", true},
		{"store/internal/sweeps", "store", true},
		{"sandbox", "store/internal/base", true},
		{"sandbox/internal/core", "store/internal/registry", true},
		{"internal/testsupport/storetest", "store/internal/base", true},
		{"cmd/xfsq", "store/internal/base", true},
		{"server", "store/internal/eventlog", true},
		{"cmd/xfsq", "journal", false},
		{"sandbox", "store", false},
		{"files", "sandbox", true},
		{"files", "sandbox/internal/core", true},
		{"sandbox", "files", false},
		{"sandbox", "sandbox/internal/core", false},
		{"cmd/xfsq", "sandbox/internal/core", true},
		{"server", "sandbox/internal/core", true},
		{"files", "inventory", false},
		{"sandbox/internal/core", "sandbox/internal/retention", true},
		{"sandbox/internal/core", "sandbox/internal/doctor", true},
		{"sandbox/internal/core", "sandbox", true},
		{"sandbox/internal/retention", "sandbox/internal/core", false},
		{"sandbox/internal/retention", "sandbox/internal/readmodel", true},
		{"sandbox/internal/core", "sandbox/internal/readmodel", true},
		{"sandbox/internal/readmodel", "sandbox/internal/core", false},
		{"sandbox/internal/readmodel", "sandbox/internal/retention", true},
		{"sandbox/internal/readmodel", "sandbox/internal/doctor", true},
		{"sandbox/internal/readmodel", "sandbox", true},
		{"sandbox/internal/readmodel", "sandbox/internal/coretest", true},
		{"sandbox", "sandbox/internal/readmodel", false},
		{"cmd/xfsq", "sandbox/internal/readmodel", true},
		{"server", "sandbox/internal/readmodel", true},
		{"sandbox/internal/doctor", "sandbox/internal/retention", true},
		{"sandbox/internal/retention", "sandbox", true},
		{"sandbox", "sandbox/internal/retention", false},
		{"sandbox/internal/retention", "sandbox/internal/coretest", true},
		{"sandbox", "sandbox/internal/coretest", true},
		{"cmd/xfsq", "sandbox/internal/retention", true},
		{"server", "sandbox/internal/retention", true},
		{"area", "errkind", true},
		{"area", "units", true},
		{"internal/deletion", "store", true},
		{"internal/deletion", "sandbox", true},
		{"internal/deletion", "server", true},
		{"internal/deletion", "internal/saferm", false},
		{"internal/deletion", "internal/fault", false},
		{"internal/deletion", "journal", false},
		{"internal/gitindex", "sweep", true},
		{"internal/gitindex", "internal/saferm", true},
		{"internal/gitindex", "area", false},
		{"internal/gitindex", "internal/nomount", false},
		{"internal/nomount", "area", true},
		{"internal/saferm", "internal/nomount", false},
		{"sweep", "internal/gitindex", false},
		{"sweep", "area", false},
		// figures: the vocabulary of a tree's figures, a pure leaf
		// beneath the core.
		{"sandbox/internal/core/figures", "quota", false},
		{"sandbox/internal/core/figures", "units", false},
		{"sandbox/internal/core/figures", "api/v1", false},
		{"sandbox/internal/core/figures", "store", true},
		{"sandbox/internal/core/figures", "quota/xfs", true},
		{"sandbox/internal/core/figures", "sandbox/internal/core", true},
		{"sandbox/internal/core", "sandbox/internal/core/figures", false},
		{"sandbox/internal/readmodel", "sandbox/internal/core/figures", false},
		{"cmd/xfsq", "sandbox/internal/core/figures", true},
		// diskfull: a full filesystem and the reserve, a leaf beneath
		// the core.
		{"sandbox/internal/core/diskfull", "store", false},
		{"sandbox/internal/core/diskfull", "units", false},
		{"sandbox/internal/core/diskfull", "sandbox/internal/core", true},
		{"sandbox/internal/core/diskfull", "quota", true},
		{"sandbox/internal/core/diskfull", "settings", true},
		{"sandbox/internal/core", "sandbox/internal/core/diskfull", false},
		{"sandbox/internal/writes", "sandbox/internal/core/diskfull", false},
		{"sandbox", "sandbox/internal/core/diskfull", false},
		{"cmd/xfsq", "sandbox/internal/core/diskfull", true},
		// identity: how a root is bound to its host, a leaf beneath the
		// core.
		{"sandbox/internal/core/identity", "store", false},
		{"sandbox/internal/core/identity", "errkind", false},
		{"sandbox/internal/core/identity", "sandbox/internal/core", true},
		{"sandbox/internal/core/identity", "quota/xfs", true},
		{"sandbox/internal/core", "sandbox/internal/core/identity", false},
		{"server", "sandbox/internal/core/identity", true},
		// settingwrites: the change of a setting, a use case beside the
		// core.
		{"sandbox/internal/settingwrites", "sandbox/internal/core", false},
		{"sandbox/internal/settingwrites", "sandbox/internal/retention", true},
		{"sandbox/internal/settingwrites", "sandbox", true},
		{"sandbox/internal/core", "sandbox/internal/settingwrites", true},
		{"sandbox", "sandbox/internal/settingwrites", false},
		{"cmd/xfsq", "sandbox/internal/settingwrites", true},
		// usage: every tree's figures read, beneath the core.
		{"sandbox/internal/core", "sandbox/internal/core/usage", false},
		{"sandbox/internal/core/usage", "store", false},
		{"sandbox/internal/core/usage", "sandbox/internal/core/figures", false},
		{"sandbox/internal/core/usage", "sandbox/internal/readmodel", true},
		{"sandbox/internal/core/usage", "sandbox/internal/retention", true},
		{"sandbox/internal/core/usage", "sandbox", true},
		{"cmd/xfsq", "sandbox/internal/core/usage", true},
		{"server", "sandbox/internal/core/usage", true},
		// lifecycle: project add and rm, a use case beside the core on
		// lifecycle.Core; doctor's repairs reach it only as the facade
		// hands it over (doctor.Projects).
		{"sandbox/internal/lifecycle", "sandbox/internal/core", false},
		{"sandbox/internal/lifecycle", "sandbox", true},
		{"sandbox/internal/lifecycle", "sandbox/internal/doctor", true},
		{"sandbox/internal/doctor", "sandbox/internal/lifecycle", true},
		{"sandbox/internal/retention", "sandbox/internal/lifecycle", true},
		{"sandbox/internal/core", "sandbox/internal/lifecycle", true},
		{"sandbox/internal/coretest", "sandbox/internal/lifecycle", false},
		{"sandbox", "sandbox/internal/lifecycle", false},
		{"cmd/xfsq", "sandbox/internal/lifecycle", true},
		{"server", "sandbox/internal/lifecycle", true},
		// doctor: a use case beside the core, on doctor.Core.
		{"sandbox/internal/doctor", "sandbox/internal/core", false},
		{"sandbox/internal/doctor", "sandbox", true},
		{"sandbox/internal/doctor", "sandbox/internal/coretest", true},
		{"sandbox/internal/retention", "sandbox/internal/doctor", true},
		{"sandbox", "sandbox/internal/doctor", false},
		{"cmd/xfsq", "sandbox/internal/doctor", true},
		{"server", "sandbox/internal/doctor", true},
		// writes: the accounting of writes, a use case beside the core on
		// writes.Core; files stands on it only through files.Core.
		{"sandbox/internal/writes", "sandbox/internal/core", false},
		{"sandbox/internal/writes", "files", false},
		{"sandbox/internal/writes", "sandbox", true},
		{"sandbox/internal/writes", "sandbox/internal/retention", true},
		{"sandbox/internal/retention", "sandbox/internal/writes", true},
		{"sandbox/internal/doctor", "sandbox/internal/writes", true},
		{"sandbox/internal/readmodel", "sandbox/internal/writes", true},
		{"sandbox/internal/writes", "sandbox/internal/readmodel", true},
		{"sandbox/internal/core", "sandbox/internal/writes", true},
		{"sandbox", "sandbox/internal/writes", false},
		{"files", "sandbox/internal/writes", true},
		{"server", "sandbox/internal/writes", true},
		// fleet: heartbeats, the hosts sharing the store, retirement, a
		// use case beside the core on fleet.Core.
		{"sandbox/internal/fleet", "sandbox/internal/core", false},
		{"sandbox/internal/fleet", "sandbox", true},
		{"sandbox/internal/fleet", "sandbox/internal/readmodel", true},
		{"sandbox/internal/readmodel", "sandbox/internal/fleet", true},
		{"sandbox/internal/core", "sandbox/internal/fleet", true},
		{"sandbox", "sandbox/internal/fleet", false},
		{"cmd/xfsq", "sandbox/internal/fleet", true},
		{"server", "sandbox/internal/fleet", true},
		// snapshots: the walks kept (the snapshot pass, top), a use case
		// beside the core on snapshots.Core; retention's pass, doctor and
		// the overview walk with it only as the facade hands it over
		// (core.SnapshotFunc).
		{"sandbox/internal/snapshots", "sandbox/internal/core", false},
		{"sandbox/internal/snapshots", "sandbox/internal/core/treewalk", false},
		{"sandbox/internal/snapshots", "sandbox", true},
		{"sandbox/internal/snapshots", "sandbox/internal/retention", true},
		{"sandbox/internal/retention", "sandbox/internal/snapshots", true},
		{"sandbox/internal/doctor", "sandbox/internal/snapshots", true},
		{"sandbox/internal/readmodel", "sandbox/internal/snapshots", true},
		{"sandbox/internal/writes", "sandbox/internal/snapshots", true},
		{"sandbox/internal/core", "sandbox/internal/snapshots", true},
		{"sandbox/internal/core/treewalk", "sandbox/internal/snapshots", true},
		{"sandbox", "sandbox/internal/snapshots", false},
		{"cmd/xfsq", "sandbox/internal/snapshots", true},
		{"server", "sandbox/internal/snapshots", true},
		// healthsources: what health reads of a root, a use case beside
		// the core.
		{"sandbox/internal/healthsources", "sandbox/internal/core", false},
		{"sandbox/internal/healthsources", "health", false},
		{"sandbox/internal/healthsources", "sandbox", true},
		{"sandbox/internal/healthsources", "sandbox/internal/readmodel", true},
		{"sandbox/internal/core", "sandbox/internal/healthsources", true},
		{"sandbox", "sandbox/internal/healthsources", false},
		{"cmd/xfsq", "sandbox/internal/healthsources", true},
		// treewalk: the walk of a tree beneath the tenant's mounts, a leaf
		// beneath the core.
		{"sandbox/internal/core", "sandbox/internal/core/treewalk", false},
		{"sandbox/internal/core/treewalk", "internal/saferm", false},
		{"sandbox/internal/core/treewalk", "inventory", false},
		{"sandbox/internal/core/treewalk", "store", false},
		{"sandbox/internal/core/treewalk", "sandbox/internal/core", true},
		{"sandbox/internal/core/treewalk", "sandbox/internal/retention", true},
		{"sandbox/internal/core/treewalk", "quota/xfs", true},
		{"sandbox/internal/core/treewalk", "journal", true},
		{"cmd/xfsq", "sandbox/internal/core/treewalk", true},
		// trend: the full-in rule, a pure leaf beneath the core.
		{"sandbox/internal/core", "sandbox/internal/core/trend", false},
		{"sandbox/internal/readmodel", "sandbox/internal/core/trend", false},
		{"sandbox", "sandbox/internal/core/trend", false},
		{"sandbox/internal/core/trend", "sandbox/internal/core", true},
		{"sandbox/internal/core/trend", "store", true},
		{"cmd/xfsq", "sandbox/internal/core/trend", true},
	} {
		v := Violations(map[string][]string{c.from: {c.to}}, nil)
		if got := len(v) > 0; got != c.broken {
			t.Errorf("%s -> %s: broken %v, want %v (%v)", c.from, c.to, got, c.broken, v)
		}
	}
	if v := Violations(map[string][]string{"files": {"store"}}, map[string]string{"files -> store": "x"}); len(v) != 0 {
		t.Errorf("an allowed edge was reported: %v", v)
	}
}
