package daemon

import (
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/internal/testsupport/prereq"
	"github.com/xfsq/xfsq/server"
)

const secretA = "a-secret-token-0123456789"

func TestParseTokens(t *testing.T) {
	hashA := fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(secretA)))
	for _, c := range []struct {
		name, file string
		err        string        // "" for success
		want       server.Caller // for secretA
	}{
		{"plain", secretA + ",ci,operator\n", "", server.Caller{Name: "ci", Role: server.RoleOperator}},
		{"hash and comment", "# comment\n\n" + hashA + ",dash,reader\n", "", server.Caller{Name: "dash", Role: server.RoleReader}},
		{"projects", secretA + `,dash,reader,"omni, other,omni"` + "\n", "", server.Caller{Name: "dash", Role: server.RoleReader, Projects: []string{"omni", "other"}}},
		{"spaces", " " + secretA + ", ci , operator\n", "", server.Caller{Name: "ci", Role: server.RoleOperator}},
		{"empty", "# nothing\n", "holds no token", server.Caller{}},
		{"two fields", "# c\n" + secretA + ",ci\n", "line 2: 2 fields", server.Caller{}},
		{"bad role", secretA + ",ci,admin\n", `line 1: role "admin"`, server.Caller{}},
		{"bad hash", "sha256:abc,ci,reader\n", "line 1: sha256: takes the 64 hex digits", server.Caller{}},
		{"short", "short,ci,reader\n", "line 1: the token is shorter than 16", server.Caller{}},
		{"duplicate", secretA + ",a,reader\n" + hashA + ",b,reader\n", "line 2: the same token as line 1", server.Caller{}},
		{"bad name", secretA + ",a b,reader\n", `line 1: name "a b" is invalid`, server.Caller{}},
		// Columns swapped: the token is where the name or the role goes.
		{"token as name", "ops-bot-primary-01,!" + secretA + ",operator\n", "line 1: name of 26 characters (not shown", server.Caller{}},
		{"token as role", "ops-bot-primary-01,ci," + secretA + "\n", "line 1: role of 25 characters (not shown", server.Caller{}},
		{"token as project", "ops-bot-primary-01,dash,reader,\"omni,!" + secretA + "\"\n", "line 1: project list: a name of 26 characters (not shown", server.Caller{}},
		{"operator limited", secretA + `,ci,operator,"omni"` + "\n", "line 1: a project list limits readers only", server.Caller{}},
		{"bad project", secretA + `,ci,reader,"Omni!"` + "\n", "line 1: project list", server.Caller{}},
		{"bad csv", secretA + `,c"i,reader` + "\n", "line 1: not CSV", server.Caller{}},
		{"placeholder", "# c\nsha256:REPLACE-ME,ci,reader\n", "line 2: the token is the example's placeholder REPLACE-ME: make a token and its line with xfsq token new", server.Caller{}},
		{"placeholder as a token", "replace-me-0123456789,ci,reader\n", "line 1: the token is the example's placeholder", server.Caller{}},
		{"old example's hash", "sha256:5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8,ci,operator\n", `line 1: the hash is of the word "password"`, server.Caller{}},
	} {
		set, err := ParseTokens(strings.NewReader(c.file), "tokens.csv")
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) || errkind.Of(err) != errkind.Input {
				t.Errorf("%s: %v, want an input error with %q", c.name, err, c.err)
			}
			if err != nil && strings.Contains(err.Error(), secretA) {
				t.Errorf("%s: the error shows the token: %v", c.name, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		got, ok := set.Lookup(secretA)
		if !ok || got.Name != c.want.Name || got.Role != c.want.Role || fmt.Sprint(got.Projects) != fmt.Sprint(c.want.Projects) ||
			(got.Projects == nil) != (c.want.Projects == nil) {
			t.Errorf("%s: %+v %v, want %+v", c.name, got, ok, c.want)
		}
		if _, ok := set.Lookup(secretA + "x"); ok {
			t.Errorf("%s: a longer token matched", c.name)
		}
		if _, ok := set.Lookup(""); ok {
			t.Errorf("%s: the empty token matched", c.name)
		}
	}
}

// TestTokenFileReload: a reload replaces the set; a bad or missing file
// keeps the old set in force and says why; a file others may read is refused.
func TestTokenFileReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens.csv")
	write := func(s string, mode os.FileMode) {
		if err := os.WriteFile(path, []byte(s), mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(path, mode)
	}
	write(secretA+",ci,operator\n", 0o644)
	if _, err := OpenTokenFile(path); err == nil || !strings.Contains(err.Error(), "readable by every user") || !strings.Contains(errkind.HintOf(err), "chmod 600") {
		t.Errorf("a world-readable file: %v, want refused with the fix", err)
	}
	write(secretA+",ci,operator\n", 0o600)
	f, err := OpenTokenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const secretB = "b-secret-token-9876543210"
	write(secretB+",ci2,reader\n", 0o600)
	if err := f.Reload(nil); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.Current().Lookup(secretA); ok {
		t.Error("the old token still works after a reload")
	}
	if c, ok := f.Current().Lookup(secretB); !ok || c.Name != "ci2" {
		t.Errorf("the new token: %+v %v", c, ok)
	}
	write(secretA+",ci,admin\n", 0o600)
	if err := f.Reload(nil); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("a bad reload: %v, want the line named", err)
	}
	os.Remove(path)
	if err := f.Reload(nil); err == nil {
		t.Error("a reload of a missing file succeeded")
	}
	if _, ok := f.Current().Lookup(secretB); !ok {
		t.Error("a bad reload dropped the tokens in force")
	}
}

// TestTokenFileExample: the example shipped in contrib/ cannot let
// anyone in: serve refuses to start on it, naming the file and the line,
// and a reload onto it keeps the tokens in force.
func TestTokenFileExample(t *testing.T) {
	example, err := os.ReadFile("../contrib/xfsq-tokens.csv.example")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "tokens.csv")
	os.WriteFile(path, example, 0o600)
	if _, err := OpenTokenFile(path); err == nil || !strings.Contains(err.Error(), "token file "+path+" line 12: the token is the example's placeholder") {
		t.Errorf("the example as it is: %v, want refused naming the file and line 12", err)
	}
	// Each of its lines, alone, is refused too.
	for i, l := range strings.Split(strings.TrimSpace(string(example)), "\n") {
		if !strings.HasPrefix(l, "#") {
			if _, err := ParseTokens(strings.NewReader(l), "example"); err == nil {
				t.Errorf("example line %d parses: %s", i+1, l)
			}
		}
	}
	os.WriteFile(path, []byte(secretA+",ci,operator\n"), 0o600)
	f, err := OpenTokenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(path, example, 0o600)
	if err := f.Reload(nil); err == nil || !strings.Contains(err.Error(), "line 12") {
		t.Errorf("a reload onto the example: %v, want refused naming line 12", err)
	}
	if _, ok := f.Current().Lookup(secretA); !ok {
		t.Error("a reload onto the example dropped the tokens in force")
	}
}

// NewToken makes a random token whose line lets it in as asked, and only it.
func TestNewToken(t *testing.T) {
	secret, line, err := NewToken("omni-ci", "reader", []string{"omni", "docs"})
	if err != nil || len(secret) != 64 || strings.Contains(line, secret) || !strings.HasSuffix(line, `,omni-ci,reader,"omni,docs"`) {
		t.Fatalf("NewToken: %q %q %v", secret, line, err)
	}
	set, err := ParseTokens(strings.NewReader(line), "new")
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := set.Lookup(secret); !ok || c.Name != "omni-ci" || c.Role != server.RoleReader || fmt.Sprint(c.Projects) != "[omni docs]" {
		t.Errorf("the new token: %+v %v", c, ok)
	}
	if again, _, _ := NewToken("omni-ci", "reader", nil); again == secret {
		t.Error("two tokens are the same")
	}
	if _, _, err := NewToken("ci", "admin", nil); err == nil || !strings.Contains(err.Error(), `role "admin"`) {
		t.Errorf("a bad role: %v", err)
	}
}

// The systemd unit shipped in contrib/ is one systemd accepts as it is
// (systemd-analyze verify: every directive known, its values valid), with
// only the binary's path pointed at one that exists here.
func TestSystemdUnitVerifies(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		prereq.Missing(t, "systemd-analyze (Debian package systemd) checks contrib/systemd/xfsq.service")
		return
	}
	unit, err := os.ReadFile("../contrib/systemd/xfsq.service")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(unit), "ExecStart=/usr/local/bin/xfsq serve") {
		t.Fatal("the unit does not start /usr/local/bin/xfsq serve")
	}
	bin, _ := exec.LookPath("true")
	path := filepath.Join(t.TempDir(), "xfsq.service")
	os.WriteFile(path, []byte(strings.ReplaceAll(string(unit), "/usr/local/bin/xfsq", bin)), 0o644)
	if out, err := exec.Command(analyze, "verify", path).CombinedOutput(); err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// TestLoadMetricsToken: the file serve reads the metrics token from is
// held to the token file's rules (not readable by every user) and holds
// one long token; errors never show it.
func TestLoadMetricsToken(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, mode)
		return p
	}
	if tok, err := LoadMetricsToken(write("good", "metrics-5e6f7a8b9c0d1e2f3a4b\n", 0o600)); err != nil || tok != "metrics-5e6f7a8b9c0d1e2f3a4b" {
		t.Errorf("a good file: %q %v", tok, err)
	}
	for _, c := range []struct {
		name, content string
		mode          os.FileMode
		want          string
	}{
		{"world", "metrics-5e6f7a8b9c0d1e2f3a4b", 0o644, "chmod 600"},
		{"short", "tooshort", 0o600, "at least 16"},
		{"two", "metrics-5e6f7a8b9c0d1e2f3a4b\nsecond-5e6f7a8b9c0d1e2f", 0o600, "one line"},
	} {
		_, err := LoadMetricsToken(write(c.name, c.content, c.mode))
		if err == nil || !strings.Contains(err.Error()+errkind.HintOf(err), c.want) || strings.Contains(err.Error(), "5e6f7a8b") {
			t.Errorf("%s: %v (hint %q), want an error naming %q and no token", c.name, err, errkind.HintOf(err), c.want)
		}
	}
}
