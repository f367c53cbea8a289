package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// oldNames are JSON names the CLI printed before CHANGELOG.md's first
// entry: each broke docs/design/README.md#output-conventions (sizes *_bytes, counts *_files/*_inodes,
// durations *_seconds, times *_at).
var oldNames = map[string]bool{
	"size": true, "bytes": true, "mtime": true, "at": true, "files": true, "dirs": true, "entries": true, "errors": true,
	"duration_ns": true, "duration_ms": true, "bytes_freed": true, "growth_24h": true, "growth_7d": true,
	"usage_as_of": true, "bytes_grace_ends": true, "inodes_grace_ends": true,
}

// checkNames walks a decoded JSON value: no old name anywhere, every time
// an RFC 3339 UTC string under a name ending _at, every duration a number
// under a name ending _seconds. Journal payloads are records as they were
// written and are not walked.
func checkNames(t *testing.T, cmd string, v any, at string) {
	t.Helper()
	switch v := v.(type) {
	case []any:
		for _, e := range v {
			checkNames(t, cmd, e, at)
		}
	case map[string]any:
		for k, e := range v {
			where := at + "." + k
			if oldNames[k] {
				t.Errorf("%s: %s is an old name (see CHANGELOG.md)", cmd, where)
			}
			if strings.Contains(k, "duration") && !strings.HasSuffix(k, "_seconds") {
				t.Errorf("%s: %s is a duration not in seconds", cmd, where)
			}
			if s, ok := e.(string); ok {
				if _, err := time.Parse(time.RFC3339Nano, s); err == nil {
					if !strings.HasSuffix(k, "_at") || !strings.HasSuffix(s, "Z") {
						t.Errorf("%s: %s = %q: a time is named *_at and given in UTC", cmd, where, s)
					}
				}
			}
			if k != "payload" {
				checkNames(t, cmd, e, where)
			}
		}
	}
}

func TestJSONFieldNames(t *testing.T) {
	s := fallbackSandbox(t, "")
	s.ok("project", "add", "omni", "--bytes-soft", "4k", "--bytes-hard", "1MiB")
	ws := filepath.Join(s.root, "projects/omni")
	os.MkdirAll(filepath.Join(ws, "src/deep"), 0o755)
	os.WriteFile(filepath.Join(ws, "src/deep/a.bin"), make([]byte, 20<<10), 0o644)
	old := time.Now().Add(-60 * 24 * time.Hour)
	os.MkdirAll(filepath.Join(s.root, "cache/omni/old"), 0o755)
	os.WriteFile(filepath.Join(s.root, "cache/omni/old/f"), make([]byte, 8<<10), 0o644)
	os.Chtimes(filepath.Join(s.root, "cache/omni/old/f"), old, old)
	os.Chtimes(filepath.Join(s.root, "cache/omni/old"), old, old)
	s.ok("settings", "set", "cache_quota_per_project", "1k")
	src := filepath.Join(t.TempDir(), "src")
	os.WriteFile(src, []byte("hello"), 0o644)
	s.ok("project", "add", "leased")
	s.ok("lease", "acquire", "leased", "r1", "--ttl", "1h")
	for _, args := range [][]string{
		{"project", "show", "omni"}, {"project", "list"}, {"report"}, {"project", "check", "omni"},
		{"snapshot", "omni"}, {"top", "omni"}, {"top", "omni", "src"}, {"sweep", "omni", "--dry-run"}, {"sweep", "omni"},
		{"files", "put", "omni", "uploads/x", "--from", src}, {"files", "ls", "omni", "uploads"}, {"files", "rm", "omni", "uploads/x"},
		{"events"}, {"lease", "list"}, {"settings", "list"}, {"doctor"},
	} {
		r := s.run(append([]string{"--json"}, args...)...)
		var v any
		if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
			t.Errorf("%v: not JSON (exit %d): %v\n%s%s", args, r.code, err, r.stdout, r.stderr)
			continue
		}
		checkNames(t, strings.Join(args, " "), v, "")
	}
}
