// Package layering holds the import rules of xfsq's packages and the test
// that enforces them over the module: the seam between the library and its
// shells (cmd/xfsq, server) is only as real as the imports say. Its tests
// also hold that a tree is measured one way only (inventory.Measure).
package layering

import (
	"fmt"
	"sort"
	"strings"
)

// Module is the module path every rule is relative to.
const Module = "github.com/xfsq/xfsq"

// shells call the library and are called by nobody in it (client, the
// HTTP API's Go client, is one: it speaks the wire, like the server).
var shells = []string{"cmd/", "server", "client"}

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

// rule says why from may not import to, or "" when it may.
func rule(from, to string) string {
	switch {
	case isShell(to) && !isShell(from):
		return "a library package imports a shell: the library is what every shell calls, never the reverse"
	case isShell(from) && (to == "store" || strings.HasPrefix(to, "store/")):
		return "a shell reaches the store only through the library, so that every shell journals and checks alike"
	case isShell(from) && (to == "quota/xfs" || strings.HasPrefix(to, "quota/xfs/")):
		return "a shell reaches the kernel backend only through the library"
	case from == "client" && to != "api/v1":
		return "client imports only the wire types (api/v1), so that a service using it links no store, driver or backend"
	case from == "api/v1" && to != "units":
		return "api/v1 is the wire's leaf: it imports nothing of xfsq but units, so that the client stays thin"
	case from == "store" && to != "quota":
		return "store imports nothing of xfsq but quota: it is the bottom layer every other one sits on"
	case from == "files" && (to == "store" || strings.HasPrefix(to, "store/")):
		return "files reaches the store only through project, which owns write accounting"
	}
	return ""
}
