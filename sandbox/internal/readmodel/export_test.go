package readmodel

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xfsq/xfsq/quota"
)

func TestMergeProjectFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "projid")
	os.WriteFile(path, []byte("# hand-made\nlegacy:42\nomni-workspace:100000\nstale-cache:100007\n"), 0o640)
	ours := map[quota.ProjectID]bool{100000: true, 100007: true, 100001: true}
	err := mergeProjectFile(path, []string{"omni-workspace:100000", "omni-cache:100001"}, ours,
		func(line string) string { _, id, _ := strings.Cut(line, ":"); return id })
	if err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	want := "# hand-made\nlegacy:42\nomni-workspace:100000\nomni-cache:100001\n"
	if string(got) != want {
		t.Errorf("merged file:\n%s\nwant:\n%s", got, want)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want the original 0640", fi.Mode().Perm())
	}
	// Running it again changes nothing: no duplicated lines.
	mergeProjectFile(path, []string{"omni-workspace:100000", "omni-cache:100001"}, ours,
		func(line string) string { _, id, _ := strings.Cut(line, ":"); return id })
	if again, _ := os.ReadFile(path); string(again) != want {
		t.Errorf("second merge changed the file:\n%s", again)
	}
	fresh := filepath.Join(t.TempDir(), "projects")
	if err := mergeProjectFile(fresh, []string{"100000:/srv/projects/omni"}, ours, func(l string) string { id, _, _ := strings.Cut(l, ":"); return id }); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(fresh); string(got) != "100000:/srv/projects/omni\n" {
		t.Errorf("new file: %q", got)
	}
}
