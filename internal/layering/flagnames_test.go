package layering

import (
	"go/ast"
	"go/token"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// namesAFlag: a CLI flag as an operator types it (--bytes-hard).
var namesAFlag = regexp.MustCompile(`(^|[^-\w])--[a-z]`)

// flagShells may name their own flags: the CLI, the HTTP server and what
// runs beside it (their errors at start-up are the serve command's), and
// test support that runs other programs (Prometheus, a test VM's init
// script).
var flagShells = []string{"cmd/", "server/", "daemon/", "internal/testsupport/promtest/", "internal/testsupport/kerneltest/"}

// flagNamesAllowed are the library literals that still name a CLI flag,
// by file and a piece of the literal. Each is a hint or a help text that
// an HTTP client reads in the CLI's words; they are to become field hints
// (errkind.WithFieldHint) or actions a shell words (#34 §2), and leave
// this list as they do. The one justified to stay:
//   - change.go "project rm --purge": the policy journalled with a purge's
//     deletions (storage.evicted's policy); a record already written says
//     it, so it is data, not a hint.
var flagNamesAllowed = map[string][]string{
	"sandbox/internal/core/change.go":       {"project rm --purge", "remove with --force"},
	"files/files.go":                        {"xfsq project rm --purge", "xfsq files rm --recursive"},
	"settings/settings.go":                  {"(or doctor --fix)", "sweep --apply refuses", "--allow-zero"},
	"sandbox/internal/retention/sweep.go":   {"xfsq sweep %s --area inbound"},
	"sandbox/internal/core/snapshot.go":     {"xfsq doctor --fix re-tags them"},
	"sandbox/internal/core/add.go":          {"run xfsq doctor --fix"},
	"sandbox/internal/core/root.go":         {"xfsq init --backend", "(--db)"},
	"sandbox/internal/core/doctor.go":       {"xfsq project rm --purge deletes it", "then run doctor --fix"},
	"sandbox/internal/core/manager.go":      {"--area inbound", "xfsq init --root", "point --db and --host", "xfsq init --backend", "run xfsq doctor --fix first"},
	"sandbox/internal/core/reservations.go": {"doctor --fix: a temporary file"},
	"sandbox/internal/core/ready.go":        {"(--db)"},
	"sandbox/internal/retention/plan.go":    {"xfsq sweep --dry-run --plan-out FILE", "xfsq events --type settings.changed"},
	"health/disk.go":                        {"xfsq init --root", "xfsq sweep --all --dry-run"},
}

// TestLibraryNamesNoFlag: no string literal of a library package names a
// CLI flag; a hint names the fields it means (errkind.WithFieldHint) and
// each shell words them, the CLI as flags, the API as JSON members.
func TestLibraryNamesNoFlag(t *testing.T) {
	used := map[string]bool{}
	eachSource(t, "cmd", func(rel string, fset *token.FileSet, f *ast.File) {
		for _, shell := range flagShells {
			if strings.HasPrefix(rel, shell) {
				return
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil || !namesAFlag.MatchString(s) {
				return true
			}
			for _, allowed := range flagNamesAllowed[rel] {
				if strings.Contains(s, allowed) {
					used[rel+"\x00"+allowed] = true
					return true
				}
			}
			t.Errorf("%s:%d: %s names a CLI flag: name the field in a hint (errkind.WithFieldHint) and let each shell word it",
				rel, fset.Position(lit.Pos()).Line, lit.Value)
			return true
		})
	})
	for file, pieces := range flagNamesAllowed {
		for _, p := range pieces {
			if !used[file+"\x00"+p] {
				t.Errorf("%s: %q is allowed to name a flag but no literal does: take it off flagNamesAllowed", file, p)
			}
		}
	}
}
