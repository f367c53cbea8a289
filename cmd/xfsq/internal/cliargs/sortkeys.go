package cliargs

import (
	"slices"
	"strings"
)

// sortKey is one word of --sort, the vocabulary report and top share:
// each orders by the same figure wherever both have it.
type sortKey struct {
	name, means string
	aliases     []string // older words for it, still taken
}

var sortKeys = []sortKey{
	{"name", "by name (report: project, then area), A to Z", []string{"project", "path"}},
	{"size", "largest first (report: bytes used)", []string{"used"}},
	{"files", "most files and directories first", []string{"inodes"}},
	{"mtime", "most recently modified first (report: last activity)", []string{"active"}},
	{"percent", "largest share first (report: of the hard byte limit; top: of the directory)", nil},
	{"growth", "largest growth over 24 h first", nil},
	{"eta", "soonest full first, at the trend of the snapshots", []string{"full-in"}},
	{"reclaimable", "most the sweep policies would free first", nil},
}

// TopSorts are the keys top orders by: the others are figures of trees
// over time, which a walk of one moment does not have.
var TopSorts = []string{"name", "size", "files", "mtime", "percent"}

// ReportSorts are the keys report orders by: all of them.
var ReportSorts = func() []string {
	var out []string
	for _, k := range sortKeys {
		out = append(out, k.name)
	}
	return out
}()

// ParseSort reads --sort for a command that orders by keys.
func ParseSort(value, command string, keys []string) (string, error) {
	for _, k := range sortKeys {
		if value == k.name || slices.Contains(k.aliases, value) {
			if !slices.Contains(keys, k.name) {
				return "", Usagef("--sort %s: %s does not order by it (report does); use %s", value, command, strings.Join(keys, ", "))
			}
			return k.name, nil
		}
	}
	return "", Usagef("--sort %q: use %s", value, strings.Join(keys, ", "))
}

// SortUsage is --sort's help for a command that orders by keys.
func SortUsage(keys []string) string {
	return "order: " + strings.Join(keys, ", ") + " (the same words for report and top)"
}
