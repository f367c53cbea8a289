package readmodel

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/xfsq/xfsq/internal/atomicfile"
	"github.com/xfsq/xfsq/quota"
)

// XFSProjects are the lines that make xfs_quota work by name for xfsq's
// trees: /etc/projects ("ID:PATH") and /etc/projid ("NAME:ID", NAME being
// PROJECT-AREA).
type XFSProjects struct {
	Projects []string `json:"projects"`
	Projid   []string `json:"projid"`
}

// ExportXFS returns the lines for every tree.
func (m *Model) ExportXFS(ctx context.Context) (XFSProjects, error) {
	out := XFSProjects{Projects: []string{}, Projid: []string{}}
	if !m.IsXFS() {
		return out, fmt.Errorf("export xfs-projects needs the xfs backend; %s uses %s", m.Root, m.BackendName())
	}
	trees, err := m.Store.Trees(ctx, "")
	if err != nil {
		return out, err
	}
	for _, t := range trees {
		out.Projects = append(out.Projects, fmt.Sprintf("%d:%s", t.ProjectID, filepath.Join(m.Root, t.Path)))
		out.Projid = append(out.Projid, fmt.Sprintf("%s-%s:%d", t.Project, t.Area, t.ProjectID))
	}
	return out, nil
}

// WriteXFSProjectFiles brings projectsPath and projidPath up to date: lines
// for xfsq's IDs (any ID it has registered on this filesystem) are replaced
// by the current ones; every other line — comments, hand-made projects — is
// kept as it was. Each file is replaced atomically.
func (m *Model) WriteXFSProjectFiles(ctx context.Context, projectsPath, projidPath string) (XFSProjects, error) {
	lines, err := m.ExportXFS(ctx)
	if err != nil {
		return lines, err
	}
	records, err := m.RegisteredIDs(ctx)
	if err != nil {
		return lines, err
	}
	ours := map[quota.ProjectID]bool{}
	for _, r := range records {
		ours[r.ProjectID] = true
	}
	idFirst := func(line string) string { id, _, _ := strings.Cut(line, ":"); return id }
	idLast := func(line string) string { _, id, _ := strings.Cut(line, ":"); return id }
	if err := mergeProjectFile(projectsPath, lines.Projects, ours, idFirst); err != nil {
		return lines, err
	}
	return lines, mergeProjectFile(projidPath, lines.Projid, ours, idLast)
}

func mergeProjectFile(path string, ourLines []string, ours map[quota.ProjectID]bool, idOf func(string) string) error {
	old, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	var kept []string
	for _, line := range strings.Split(strings.TrimRight(string(old), "\n"), "\n") {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" && len(old) == 0 {
			continue
		}
		if !strings.HasPrefix(trimmed, "#") {
			if id, err := strconv.ParseUint(strings.TrimSpace(idOf(trimmed)), 10, 32); err == nil && ours[quota.ProjectID(id)] {
				continue // ours: replaced below
			}
		}
		kept = append(kept, line)
	}
	content := strings.Join(append(kept, ourLines...), "\n") + "\n"
	mode := os.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	return atomicfile.WriteFile(path, []byte(content), mode)
}
