// Package docs_test holds the documentation to what it points at: every
// relative link in README.md, CHANGELOG.md and docs/ names a file that
// exists and, when it has a #fragment, a heading that is there.
package docs_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// markdownFiles are the pages a reader navigates.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"../README.md", "../CHANGELOG.md"}
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

var (
	inlineLink = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)\)`)
	fence      = regexp.MustCompile("(?ms)^```.*?^```")
	codeSpan   = regexp.MustCompile("`[^`\n]*`")
	heading    = regexp.MustCompile(`(?m)^#{1,6} +(.+?) *#*$`)
)

func TestLinksResolve(t *testing.T) {
	checked := 0
	for _, page := range markdownFiles(t) {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, target := range links(string(data)) {
			checked++
			if why := unresolved(page, target); why != "" {
				t.Errorf("%s: link %q: %s", page, target, why)
			}
		}
	}
	if checked < 50 {
		t.Errorf("only %d links checked: the test sees too little", checked)
	}
}

// links are the relative targets of a page's Markdown links, outside code.
func links(page string) []string {
	text := codeSpan.ReplaceAllString(fence.ReplaceAllString(page, ""), "")
	var out []string
	for _, m := range inlineLink.FindAllStringSubmatch(text, -1) {
		target := m[1]
		if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
			continue
		}
		out = append(out, target)
	}
	return out
}

// unresolved says why target, linked from page, leads nowhere ("" if it resolves).
func unresolved(page, target string) string {
	file, fragment, _ := strings.Cut(target, "#")
	path := page
	if file != "" {
		path = filepath.Join(filepath.Dir(page), file)
	}
	info, err := os.Stat(path)
	if err != nil {
		return "no such file"
	}
	if fragment == "" {
		return ""
	}
	if info.IsDir() || !strings.HasSuffix(path, ".md") {
		return "a fragment into something that is not a Markdown page"
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	for _, a := range anchors(string(data)) {
		if a == fragment {
			return ""
		}
	}
	return "no heading with the anchor #" + fragment
}

// anchors are the fragments a forge gives a page's headings: lower case,
// punctuation dropped, spaces as hyphens, repeats numbered.
func anchors(page string) []string {
	seen := map[string]int{}
	var out []string
	for _, m := range heading.FindAllStringSubmatch(fence.ReplaceAllString(page, ""), -1) {
		var b strings.Builder
		for _, r := range strings.ToLower(m[1]) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r > 0x7f:
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out = append(out, a+"-"+strconv.Itoa(n))
		} else {
			out = append(out, a)
		}
		seen[a]++
	}
	return out
}

// The anchor rule is the forge's: checked against headings whose anchors
// GitHub is known to give.
func TestAnchors(t *testing.T) {
	got := anchors("# The journal and crash safety\n## `xfsq serve` under load\n## Metrics, alerts and Grafana\n## Metrics, alerts and Grafana\n```\n# not a heading\n```\n")
	want := []string{"the-journal-and-crash-safety", "xfsq-serve-under-load", "metrics-alerts-and-grafana", "metrics-alerts-and-grafana-1"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("anchors: %q, want %q", got, want)
	}
}

// The README stays a front page: a screen's worth of sections, not the manual.
func TestReadmeIsShort(t *testing.T) {
	data, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), "\n"); n > 250 {
		t.Errorf("README.md has %d lines; the manual belongs in docs/ (at most 250)", n)
	}
	for _, want := range []string{"docs/screenshots/dashboard.png", "docs/screenshots/report.png", "scripts/demo.sh", "scripts/test.sh", "docs/cli.md"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("README.md does not show or link %s", want)
		}
	}
	if strings.Contains(string(data), "Disk quota exceeded") {
		t.Error("README promises \"Disk quota exceeded\"; XFS project quotas return \"No space left on device\"")
	}
	if !strings.Contains(string(data), "N/3 projects") {
		t.Error("README does not say how many projects an ID range holds (three IDs a project: N/3)")
	}
}

// CHANGELOG.md keeps the Keep a Changelog form: an Unreleased section on top
// and only its change types as subsections.
func TestChangelogForm(t *testing.T) {
	data, err := os.ReadFile("../CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	if !strings.HasPrefix(s, "# Changelog\n") || !strings.Contains(s, "https://keepachangelog.com/") {
		t.Error("CHANGELOG.md does not open as Keep a Changelog does")
	}
	versions := regexp.MustCompile(`(?m)^## (.*)$`).FindAllStringSubmatch(s, -1)
	if len(versions) == 0 || versions[0][1] != "[Unreleased]" {
		t.Errorf("CHANGELOG.md's first section must be ## [Unreleased], got %q", versions)
	}
	for _, m := range regexp.MustCompile(`(?m)^### (.*)$`).FindAllStringSubmatch(s, -1) {
		switch m[1] {
		case "Added", "Changed", "Deprecated", "Removed", "Fixed", "Security":
		default:
			t.Errorf("CHANGELOG.md: %q is not a Keep a Changelog change type", m[1])
		}
	}
}

var docCitation = regexp.MustCompile(`docs/[a-z0-9/._-]*[a-z0-9]\.md(#[a-z0-9_-]+)?`)

// Code comments cite the pages of docs/, never a spec outside the
// repository, and every page and anchor they cite exists.
func TestCodeCitesDocsThatExist(t *testing.T) {
	cited := 0
	err := filepath.WalkDir("..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !(strings.HasSuffix(path, ".go") || strings.HasSuffix(path, ".sh") || strings.HasSuffix(path, ".json")) {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if spec := "SPEC " + "§"; strings.Contains(string(data), spec) || strings.Contains(string(data), "SPEC "+"section") {
			t.Errorf("%s cites the spec by section; cite the page of docs/ that holds it", path)
		}
		for _, c := range docCitation.FindAllString(string(data), -1) {
			cited++
			if why := unresolved("../x.md", c); why != "" {
				t.Errorf("%s cites %s: %s", path, c, why)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if cited < 20 {
		t.Errorf("only %d citations of docs/ found: the test sees too little", cited)
	}
}
