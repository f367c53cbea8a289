// Package layering holds the import rules of xfsq's packages and the test
// that enforces them over the module: the seam between the library and its
// shells (cmd/xfsq, server) is only as real as the imports say, and so is
// the one between the core and the use cases beside it. Its tests
// also hold that a tree is measured one way only (inventory.Measure), that
// event names are spelled only in the journal package, and that no package
// outside store queries the database itself.
package layering

import (
	"fmt"
	"sort"
	"strings"
)

// Module is the module path every rule is relative to.
const Module = "github.com/xfsq/xfsq"

// shells call the library and are called by nobody in it (client, the
// HTTP API's Go client, is one: it speaks the wire, like the server; daemon
// is what xfsq serve runs beside the server).
var shells = []string{"cmd/", "server", "client", "daemon"}

func isShell(pkg string) bool {
	for _, s := range shells {
		if pkg == strings.TrimSuffix(s, "/") || strings.HasPrefix(pkg, s) {
			return true
		}
	}
	return false
}

// Violations checks a graph of direct imports (package → packages, both
// relative to Module; imports outside it are ignored) against the rules and
// returns one line per broken rule, sorted. allowed lists "from -> to"
// edges still to be removed; they are not reported.
func Violations(graph map[string][]string, allowed map[string]string) []string {
	var out []string
	for from, imports := range graph {
		for _, to := range imports {
			if why := rule(from, to); why != "" {
				edge := from + " -> " + to
				if _, ok := allowed[edge]; !ok {
					out = append(out, fmt.Sprintf("%s: %s", edge, why))
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// deletionMayImport is all internal/deletion may import of xfsq: its record
// is the journal's type.
var deletionMayImport = map[string]bool{"internal/saferm": true, "internal/fault": true, "journal": true}

// The core and the use cases beside it (every other package under
// sandbox/internal/): the facade, sandbox, holds them all.
const (
	core     = "sandbox/internal/core"
	coretest = "sandbox/internal/coretest"
	// trendRule is the full-in estimate, a leaf of the core's the read
	// model fits with too.
	trendRule = core + "/trend"
	// figuresRule is the vocabulary of a tree's figures and admission's
	// rule, a leaf of the core's that the use cases and the facade speak.
	figuresRule = core + "/figures"
	// treewalkRule is the walk of a tree beneath the tenant's mounts, a
	// leaf of the core's that the snapshot pass walks with too.
	treewalkRule = core + "/treewalk"
	// diskfullRule is a full filesystem told from a quota's refusal and
	// the reserve beside an embedded store, a leaf of the core's that the
	// accounting of writes and the facade name too.
	diskfullRule = core + "/diskfull"
	// identityRule is how a root is bound to its host name, a leaf of the
	// core's.
	identityRule = core + "/identity"
)

// identityMayImport is all the binding of a root to its host may import of
// xfsq: the store whose bindings it reads and the kinds its refusals are
// of (the core records the binding).
var identityMayImport = map[string]bool{"store": true, "errkind": true}

// diskfullMayImport is all the full filesystem's leaf may import of xfsq:
// the store's classification of a failed write (store.Full) and the units
// it words sizes in.
var diskfullMayImport = map[string]bool{"store": true, "units": true}

// treewalkMayImport is all the walk of a tree may import of xfsq: the
// remover's safe opening, the walker, and the backend's and the store's
// vocabulary (it records nothing: its callers store the walks).
var treewalkMayImport = map[string]bool{"internal/saferm": true, "inventory": true, "quota": true, "store": true}

// figuresMayImport is all the figures' leaf may import of xfsq: the
// backend's vocabulary, the units it words sizes in, the JSON quoting its
// kept backend object shares, and the wire's types (api/v1), which a
// tree's figures and the backend object are.
var figuresMayImport = map[string]bool{"quota": true, "units": true, "internal/jsonfmt": true, "api/v1": true}

// cliInternal is the CLI's own machinery beneath package main (text
// output, argument reading, report columns, --from, --follow, generated
// documents): shells too, and narrower than the CLI itself.
const cliInternal = "cmd/xfsq/internal/"

// cliInternalMayImport is all the CLI's machinery may import of xfsq
// besides its own packages: the library's facade and the vocabularies
// every layer speaks. Never the store (the journal's storage among it), a
// quota backend, the server or the daemon: what it needs of them it asks
// sandbox, as package main does.
var cliInternalMayImport = map[string]bool{"sandbox": true, "area": true, "units": true, "errkind": true,
	"journal": true, "internal/safetext": true}

// useCases are the use cases there are: lifecycle (project add and rm),
// retention (what deletes by policy), readmodel (the answers assembled for
// readers), fleet (the hosts sharing the store), snapshots (the walks
// kept: the snapshot pass and top), healthsources (what health reads of
// a root) and settingwrites (the change of a setting). A package added under
// sandbox/internal/ is held as one whether or not it is named here;
// TestImportRules checks that each named is there.
var useCases = []string{"sandbox/internal/lifecycle", "sandbox/internal/retention", "sandbox/internal/readmodel", "sandbox/internal/fleet",
	"sandbox/internal/snapshots", "sandbox/internal/healthsources", "sandbox/internal/settingwrites"}

// isUseCase says whether pkg is a use case beside the core: a package
// under sandbox/internal/ other than the core and its test support.
func isUseCase(pkg string) bool {
	return strings.HasPrefix(pkg, "sandbox/internal/") && pkg != core && !strings.HasPrefix(pkg, core+"/") && pkg != coretest
}

// rule says why from may not import to, or "" when it may.
func rule(from, to string) string {
	switch {
	case from == core && (to == "sandbox" || isUseCase(to)):
		return "the core never imports the facade or a use case: they stand on it, and what a use case needs of it the core exports"
	case isUseCase(from) && isUseCase(to):
		return "a use case never imports another: each stands on the core alone, and what two share belongs in the core"
	case isUseCase(from) && to == "sandbox":
		return "a use case never imports the facade that calls it"
	case to == coretest:
		return "sandbox/internal/coretest is for the use cases' tests: no library or shell links it"
	case isShell(to) && !isShell(from):
		return "a library package imports a shell: the library is what every shell calls, never the reverse"
	case strings.HasPrefix(from, cliInternal) && !strings.HasPrefix(to, cliInternal) && !cliInternalMayImport[to]:
		return "the CLI's machinery under cmd/xfsq/internal imports only sandbox, its own packages and the vocabularies (area, units, errkind, journal, safetext): never the store, a quota backend, the server or the daemon"
	case isShell(from) && (to == "store" || strings.HasPrefix(to, "store/")):
		return "a shell reaches the store only through the library, so that every shell journals and checks alike"
	case isShell(from) && strings.HasPrefix(to, "sandbox/"):
		return "a shell holds sandbox.Root and nothing beneath it: the core and its use cases are sandbox's own"
	case isShell(from) && (to == "quota/xfs" || strings.HasPrefix(to, "quota/xfs/") || to == "quota/fallback"):
		return "a shell reaches a quota backend (the kernel's or the fallback) only through the library"
	case strings.HasPrefix(to, "internal/testsupport/") && !strings.HasPrefix(from, "internal/testsupport/"):
		return "internal/testsupport is for tests: no library or shell links a test's helpers"
	case from == "server" && to == "daemon":
		return "server is the HTTP shell only: what runs beside it (passes, token file, log buffer) is daemon's, which uses it"
	case from == "client" && to != "api/v1":
		return "client imports only the wire types (api/v1), so that a service using it links no store, driver or backend"
	case from == "api/v1" && to != "units":
		// The reverse edge is allowed on purpose: where a library result
		// has the wire's shape, the core, a use case or health answers the
		// wire's type itself (type X = apiv1.X), so that the shape is
		// declared once and no shell converts; this rule keeps that edge
		// from ever closing a cycle.
		return "api/v1 is the wire's leaf: it imports nothing of xfsq but units, so that the client stays thin and the library may answer its types"
	case from == "journal":
		return "journal imports nothing of xfsq: it is the journal's vocabulary, which the store below and a client at the edge both speak"
	case strings.HasPrefix(to, "store/internal/") && from != "store" && !strings.HasPrefix(from, "store/internal/"):
		return "store/internal is the store's own: only store and its areas import it, so that store stays the one face its callers see"
	case strings.HasPrefix(from, "store/internal/") && to != "quota" && to != "journal" && !strings.HasPrefix(to, "store/internal/"):
		return "an area of the store imports nothing of xfsq but quota, journal and the areas beneath it: the store is the bottom layer"
	case from == "store" && to != "quota" && to != "journal" && !strings.HasPrefix(to, "store/internal/"):
		return "store imports nothing of xfsq but quota, journal and its own areas (store/internal): it is the bottom layer every other one sits on"
	case from == "files" && (to == "store" || strings.HasPrefix(to, "store/")):
		return "files reaches the store only through sandbox, whose accounting of writes (sandbox/internal/writes) implements files.Core"
	case from == "files" && (to == "sandbox" || strings.HasPrefix(to, "sandbox/")):
		return "files never imports sandbox: it declares what it needs of the core (files.Core), and sandbox implements it and hands the layer out"
	case from == trendRule:
		return "the full-in rule is a pure leaf beneath the core: it imports nothing of xfsq, so that the core and the read model fit alike"
	case strings.HasPrefix(from, core+"/") && (isUseCase(to) || to == "sandbox"):
		return "a package beneath the core (its figures, their reads, the full-in rule, the walk of a tree) never imports a use case or the facade: the core calls it, and they stand on the core"
	case from == figuresRule && !figuresMayImport[to]:
		return "the figures' vocabulary is a pure leaf beneath the core: it imports nothing of xfsq but quota, units, jsonfmt and the wire's types, so that it never reads the store, the kernel or a tree"
	case from == treewalkRule && !treewalkMayImport[to]:
		return "the walk of a tree is a leaf beneath the core: it imports only saferm, inventory, quota and store, so that it decides nothing and records nothing"
	case from == diskfullRule && !diskfullMayImport[to]:
		return "the full filesystem's leaf is beneath the core: it imports only store (its classification of a failed write) and units, so that it reads no tree, limit or setting"
	case from == identityRule && !identityMayImport[to]:
		return "the binding of a root to its host is a leaf beneath the core: it imports only store (the bindings it reads) and errkind, so that it reads no tree, limit or setting"
	case from == "area":
		return "area is a leaf: the vocabulary every layer speaks imports nothing of xfsq"
	case from == "internal/deletion" && !deletionMayImport[to]:
		return "the journalled deletion imports only saferm, fault and the journal's vocabulary: the caller gives it the journal, and it never reaches a shell, the store or a policy"
	case from == "internal/gitindex" && to != "area" && to != "internal/nomount":
		return "the git reader imports nothing of xfsq but area's words for file types and nomount's looks: it reads a tenant's files and answers what is tracked, nothing more"
	case from == "internal/nomount":
		return "nomount is a leaf: the looks and opens that never ask a tenant's mount import nothing of xfsq"
	}
	return ""
}
