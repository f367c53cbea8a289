package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/xfsq/xfsq/journal"
)

// evilName is a file name a tenant can choose: it would clear the screen
// and fake a line of output if printed raw.
const evilName = "evil\x1b[2J\nFAKE\x07\xff"

const evilEscaped = `evil\e[2J\nFAKE\x07\xff`

// onTerminal runs xfsq on a pseudo-terminal (script(1)) and returns what
// the terminal received.
func onTerminal(t *testing.T, s *testRoot, env string, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath("script"); err != nil {
		t.Fatal("script (util-linux) is needed to give the command a terminal")
	}
	cmdline := fmt.Sprintf("%s XFSQ_HOST=test-host %s --root %s %s", env, os.Getenv(envBinary), s.root, strings.Join(args, " "))
	out, _ := exec.Command("script", "-qec", cmdline, "/dev/null").CombinedOutput()
	return string(out)
}

func noRaw(t *testing.T, what, out string) {
	t.Helper()
	if strings.Contains(out, "\x1b") || strings.Contains(out, "\x07") || strings.Contains(out, "\nFAKE") || strings.Contains(out, "\xff") {
		t.Errorf("%s prints a tenant's name raw:\n%q", what, out)
	}
}

func TestOutputEscapesTenantNames(t *testing.T) {
	s := fallbackSandbox(t, "")
	s.ok("project", "add", "omni")
	ws := filepath.Join(s.root, "projects/omni")
	os.WriteFile(filepath.Join(ws, evilName), make([]byte, 5000), 0o644)
	os.Mkdir(filepath.Join(ws, evilName+"dir"), 0o755)
	os.WriteFile(filepath.Join(ws, evilName+"dir", "f"), make([]byte, 9000), 0o644)
	cache := filepath.Join(s.root, "cache/omni", evilName)
	os.WriteFile(cache, make([]byte, 8000), 0o644)
	old := time.Now().Add(-60 * 24 * time.Hour)
	os.Chtimes(cache, old, old)
	s.ok("settings", "set", "cache_quota_per_project", "1k")

	for _, args := range [][]string{
		{"files", "ls", "omni"}, {"top", "omni"}, {"snapshot", "omni"}, {"sweep", "omni", "--dry-run"}, {"sweep", "omni"}, {"events"},
	} {
		out := s.ok(args...)
		noRaw(t, strings.Join(args, " "), out)
		// The journal is JSON, which keeps invalid UTF-8 as U+FFFD.
		if !strings.Contains(out, strings.TrimSuffix(evilEscaped, `\xff`)) {
			t.Errorf("%v does not show the name escaped (%s):\n%s", args, evilEscaped, out)
		}
	}
	// An error quoting the name escapes it too; JSON keeps it exact.
	r := s.run("files", "get", "omni", evilName+"dir")
	noRaw(t, "an error", r.stderr)
	var entries []struct {
		Name string `json:"name"`
	}
	s.json(&entries, "files", "ls", "omni")
	found := false
	for _, e := range entries {
		found = found || e.Name == strings.ToValidUTF8(evilName, "\uFFFD") // JSON's form of invalid UTF-8
	}
	if !found {
		t.Errorf("files ls --json lost the exact name: %+v", entries)
	}
}

// zoned is a time as text output prints it: with its zone.
var zoned = regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d:\d\d [A-Z]{2,5}|[+-]\d\d`)

func TestEventsReadable(t *testing.T) {
	s := fallbackSandbox(t, "")
	s.ok("project", "add", "omni", "--bytes-hard", "2MiB")
	s.ok("settings", "set", "cache_min_age", "2h")
	dir := filepath.Join(s.root, "cache/omni/old")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "f"), make([]byte, 5000), 0o644)
	old := time.Now().Add(-30 * 24 * time.Hour)
	os.Chtimes(filepath.Join(dir, "f"), old, old)
	os.Chtimes(dir, old, old)
	s.ok("settings", "set", "cache_quota_per_project", "1k")
	if out := s.ok("sweep", "omni"); !strings.Contains(out, "deleted 1 entry,") {
		t.Errorf("sweep of one entry, plural wrong:\n%s", out)
	}

	out := s.ok("events")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for _, l := range lines {
		if !zoned.MatchString(l) || !strings.Contains(l, "(by ") {
			t.Errorf("event line without a zoned time or who: %q", l)
		}
	}
	if n := strings.Count(out, "cache/omni/old"); n != 1 {
		t.Errorf("the deletion shows %d times, want once with its final state:\n%s", n, out)
	}
	if !strings.Contains(out, "omni: deleted cache/omni/old, 8.0 KiB") && !strings.Contains(out, "omni: deleted cache/omni/old, 12.0 KiB") {
		t.Errorf("deletion not one readable line (what, where, how much in IEC):\n%s", out)
	}
	if !strings.Contains(out, "setting cache_min_age: 1w → 2h") || !strings.Contains(out, "workspace hard 2.0 MiB") {
		t.Errorf("settings and project lines:\n%s", out)
	}
	if strings.Contains(out, "{") {
		t.Errorf("raw payloads in the text:\n%s", out)
	}
	if got := s.ok("settings", "get", "cache_min_age"); strings.TrimSpace(got) != "2h" {
		t.Errorf("settings get cache_min_age = %q, want 2h as given", got)
	}
	if list := s.ok("settings", "list"); strings.Contains(list, "0m0s") || strings.Contains(list, "m0s ") {
		t.Errorf("settings list mixes duration forms:\n%s", list)
	}
	// A refusal reads in IEC, with what is on disk apart from what a write
	// in progress has reserved.
	held := exec.Command(os.Getenv(envBinary), "--root", s.root, "files", "put", "omni", "streaming")
	held.Env = append(os.Environ(), s.env...)
	stdin, _ := held.StdinPipe()
	if err := held.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { held.Process.Kill(); held.Wait() }()
	stdin.Write(make([]byte, 1<<20))
	st := s.store()
	for deadline := time.Now().Add(10 * time.Second); ; {
		if res, _ := st.Reservations(context.Background()); len(res) == 1 && res[0].Bytes >= 1<<20 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the streaming put never reserved its first MiB")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd := exec.Command(os.Getenv(envBinary), "--root", s.root, "files", "put", "omni", "big")
	cmd.Env = append(os.Environ(), s.env...)
	cmd.Stdin = strings.NewReader(strings.Repeat("x", 3<<19))
	msg, _ := cmd.CombinedOutput()
	if !regexp.MustCompile(`KiB \(\d+ bytes\) on disk \+ [\d.]+ [KM]iB \(\d+ bytes\) reserved by writes in progress \+ .+ requested > 2\.0 MiB \(2097152 bytes\) limit`).Match(msg) {
		t.Errorf("quota refusal without on disk and reserved apart, in IEC: %s", msg)
	}
	held.Process.Kill()
	// files ls is sorted by name.
	for _, n := range []string{"zeta", "alpha", "mid"} {
		os.WriteFile(filepath.Join(s.root, "projects/omni", n), nil, 0o644)
	}
	ls := s.ok("files", "ls", "omni")
	if a, m, z := strings.Index(ls, "alpha"), strings.Index(ls, "mid"), strings.Index(ls, "zeta"); !(a < m && m < z) {
		t.Errorf("files ls not sorted:\n%s", ls)
	}
}

func TestEventsFollow(t *testing.T) {
	s := fallbackSandbox(t, "")
	s.ok("project", "add", "omni")
	cmd := exec.Command(os.Getenv(envBinary), "--root", s.root, "events", "--follow")
	cmd.Env = append(os.Environ(), s.env...)
	stdout, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	wait := func(sub string) {
		t.Helper()
		deadline := time.After(20 * time.Second)
		for {
			select {
			case l := <-lines:
				if strings.Contains(l, sub) {
					return
				}
			case <-deadline:
				t.Fatalf("events --follow never printed %q", sub)
			}
		}
	}
	wait("omni: added")
	s.ok("project", "add", "later")
	wait("later: added")
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	if err != nil || strings.TrimSpace(stderr.String()) != "" {
		t.Errorf("events --follow after SIGINT: %v, stderr %q; want exit 0 and nothing said", err, stderr.String())
	}
}

func TestProgressLineNeverCollides(t *testing.T) {
	s := fallbackSandbox(t, "")
	s.ok("project", "add", "omni")
	ws := filepath.Join(s.root, "projects/omni")
	for i := range 40 {
		d := filepath.Join(ws, fmt.Sprint("d", i))
		os.Mkdir(d, 0o755)
		for j := range 500 {
			os.WriteFile(filepath.Join(d, fmt.Sprint(j)), nil, 0o644)
		}
	}
	out := onTerminal(t, s, "", "snapshot", "omni")
	if !strings.Contains(out, "omni workspace: 20000 files") {
		t.Errorf("the progress line does not name the tree:\n%q", out)
	}
	// The result starts on a cleared line, never after a progress count.
	i := strings.Index(out, "omni workspace: ")
	last := strings.LastIndex(out, "files/s")
	res := strings.LastIndex(out, "omni workspace: 4.0 KiB") // a result line names no rate
	res = max(res, strings.LastIndex(out, "omni workspace: "))
	if i < 0 || last < 0 || res < last || !strings.Contains(out[last:res], "\r\x1b[K") {
		t.Errorf("the result is printed beside the progress line:\n%q", out)
	}
	top := onTerminal(t, s, "", "top", "omni")
	if !strings.Contains(top, "files/s") || !strings.Contains(top, "\r\x1b[K") {
		t.Errorf("top has no progress line on a terminal:\n%q", top)
	}
	if r := s.run("top", "omni"); strings.Contains(r.stderr, "files/s") {
		t.Errorf("top prints progress into a pipe: %q", r.stderr)
	}
}

func TestTopDrillsIn(t *testing.T) {
	s := fallbackSandbox(t, "")
	s.ok("project", "add", "omni")
	ws := filepath.Join(s.root, "projects/omni")
	os.MkdirAll(filepath.Join(ws, "node_modules/a"), 0o755)
	os.MkdirAll(filepath.Join(ws, "node_modules/b"), 0o755)
	os.WriteFile(filepath.Join(ws, "node_modules/a/big"), make([]byte, 1<<20), 0o644)
	for i := range 5 {
		os.WriteFile(filepath.Join(ws, "node_modules/b", fmt.Sprint(i)), make([]byte, 100), 0o644)
	}
	os.WriteFile(filepath.Join(ws, "node_modules/loose.bin"), make([]byte, 300<<10), 0o644)
	os.WriteFile(filepath.Join(ws, "top-level.iso"), make([]byte, 200<<10), 0o644)
	os.Symlink("/", filepath.Join(ws, "out"))

	out := s.ok("top", "omni", "node_modules")
	if !strings.Contains(out, "omni workspace node_modules") || !strings.Contains(out, "  a\n") && !strings.Contains(out, "  a ") {
		t.Errorf("top omni node_modules:\n%s", out)
	}
	if !regexp.MustCompile(`file .*loose\.bin`).MatchString(out) || !strings.Contains(out, "APPARENT") {
		t.Errorf("top without files beside directories or apparent size:\n%s", out)
	}
	byFiles := s.ok("top", "omni", "node_modules", "--sort", "files", "--limit", "1")
	rows := strings.Split(strings.TrimSpace(byFiles), "\n")
	if !strings.HasSuffix(strings.TrimSpace(rows[3]), " b") || strings.Contains(byFiles, "  a\n") {
		t.Errorf("--sort files --limit 1 should show b alone below the root:\n%s", byFiles)
	}
	for _, bad := range []string{"../projects", "out", "/etc", "node_modules/a/big"} {
		if r := s.run("top", "omni", bad); r.code != 2 {
			t.Errorf("top omni %s: exit %d %q, want 2", bad, r.code, r.stderr)
		}
	}
	var res struct {
		Project, Area, Path string
		WalkedAt            string `json:"walked_at"`
	}
	s.json(&res, "top", "omni", "node_modules")
	if res.Project != "omni" || res.Area != "workspace" || res.Path != "node_modules" || !strings.HasSuffix(res.WalkedAt, "Z") {
		t.Errorf("top --json does not name its tree and time: %+v", res)
	}
	if snap := s.ok("snapshot", "omni"); !strings.Contains(snap, "top-level.iso") {
		t.Errorf("snapshot text without its top-level files:\n%s", snap)
	}
}

func TestReportFiltersAndCheck(t *testing.T) {
	s := fallbackSandbox(t, "")
	s.ok("project", "add", "full", "--bytes-hard", "64k")
	s.ok("project", "add", "roomy")
	os.WriteFile(filepath.Join(s.root, "projects/full/blob"), make([]byte, 80<<10), 0o644)
	s.ok("snapshot", "--all")

	if out := s.ok("report", "--project", "roomy"); strings.Contains(out, "full") || !strings.Contains(out, "roomy") {
		t.Errorf("report --project roomy:\n%s", out)
	}
	if out := s.ok("report", "--area", "cache"); strings.Contains(out, "workspace") {
		t.Errorf("report --area cache:\n%s", out)
	}
	if out := s.ok("report", "--over", "90", "-N"); strings.Contains(out, "PROJECT") || strings.Contains(out, "backend") ||
		len(strings.Split(strings.TrimSpace(out), "\n")) != 1 || !strings.HasPrefix(out, "full") {
		t.Errorf("report --over 90 -N, want the one full row alone:\n%s", out)
	}
	if out := s.ok("report"); !strings.Contains(out, "GRACE") {
		t.Errorf("report without grace:\n%s", out)
	}
	if r := s.run("report", "--check"); r.code != 1 {
		t.Errorf("report --check with a tree over its hard limit: exit %d", r.code)
	}
	if r := s.run("report", "--check", "--project", "roomy"); r.code != 0 {
		t.Errorf("report --check of the roomy project: exit %d %s", r.code, r.stderr)
	}
	if r := s.run("report", "--project", "nope"); r.code != 2 {
		t.Errorf("report --project nope: exit %d", r.code)
	}
	if out := onTerminal(t, s, "", "report"); !strings.Contains(out, "\x1b[31m") {
		t.Errorf("no colour on a terminal:\n%q", out)
	}
	if out := onTerminal(t, s, "NO_COLOR=1", "report"); strings.Contains(out, "\x1b[31m") {
		t.Errorf("colour despite NO_COLOR:\n%q", out)
	}
	if out := s.ok("report"); strings.Contains(out, "\x1b[") {
		t.Errorf("colour into a pipe:\n%q", out)
	}
}

func TestCompletionAndManPage(t *testing.T) {
	s := fallbackSandbox(t, "")
	for shell, want := range map[string]string{"bash": "complete -o bashdefault", "zsh": "#compdef xfsq", "fish": "complete -c xfsq"} {
		if out := s.ok("completion", shell); !strings.Contains(out, want) {
			t.Errorf("completion %s lacks %q:\n%.300s", shell, want, out)
		}
	}
	if fish := s.ok("completion", "fish"); !strings.Contains(fish, "snapshot") || !strings.Contains(fish, "bytes-hard") {
		t.Error("fish completion is not the command tree")
	}
	// The bash script asks the binary: the words after "project".
	if out := s.ok("project", "--generate-bash-completion"); !strings.Contains(out, "add") || !strings.Contains(out, "check") {
		t.Errorf("completion words for project: %q", out)
	}
	// The bash script, sourced in a bare bash (no bash-completion package),
	// completes commands and flags from the binary.
	script := filepath.Join(t.TempDir(), "xfsq.bash")
	os.WriteFile(script, []byte(s.ok("completion", "bash")), 0o644)
	bin := filepath.Join(t.TempDir(), "bin")
	os.Mkdir(bin, 0o755)
	os.Symlink(os.Getenv(envBinary), filepath.Join(bin, "xfsq"))
	bash := exec.Command("bash", "--norc", "--noprofile", "-c", `source "$1"
COMP_WORDS=(xfsq pro); COMP_CWORD=1; _xfsq_complete; echo "1: ${COMPREPLY[*]}"
COMP_WORDS=(xfsq project ""); COMP_CWORD=2; _xfsq_complete; echo "2: ${COMPREPLY[*]}"
COMP_WORDS=(xfsq project add omni --bytes-h); COMP_CWORD=4; _xfsq_complete; echo "3: ${COMPREPLY[*]}"`, "bash", script)
	bash.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"))
	got, err := bash.CombinedOutput()
	if err != nil || !strings.Contains(string(got), "1: project\n") || !strings.Contains(string(got), "2: add set rm list show check") ||
		!strings.Contains(string(got), "3: --bytes-hard\n") {
		t.Errorf("bash completion (%v):\n%s", err, got)
	}
	if r := s.run("completion", "tcsh"); r.code != 2 {
		t.Errorf("completion tcsh: exit %d", r.code)
	}
	man := filepath.Join(t.TempDir(), "xfsq.1")
	if out, err := exec.Command("../../scripts/man.sh", man).CombinedOutput(); err != nil {
		t.Fatalf("scripts/man.sh: %v\n%s", err, out)
	}
	page, _ := os.ReadFile(man)
	for _, want := range []string{".TH xfsq 1", "snapshot", "bytes-hard", "completion"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("man page lacks %q", want)
		}
	}
}

// The event log says what a deletion did: a removal the tenant's tree
// changed under before anything went reads as nothing deleted, not as a
// deletion; a recovered record (whose counts the crash lost) still reads as
// deleted.
func TestEventDetailOfDeletions(t *testing.T) {
	cases := []struct {
		payload map[string]any
		want    string
	}{
		{map[string]any{"state": "done", "path": "projects/a/d", "freed_bytes": 4096.0, "removed_entries": 2.0}, "deleted projects/a/d, 4.0 KiB, 2 entries"},
		{map[string]any{"state": "done", "path": "projects/a/d", "freed_bytes": 0.0, "removed_entries": 0.0}, "found nothing to delete at projects/a/d, 0 B"},
		{map[string]any{"state": "partial", "path": "projects/a/d", "freed_bytes": 0.0, "removed_entries": 0.0}, "left in place projects/a/d, 0 B"},
		{map[string]any{"state": "partial", "path": "projects/a/d", "freed_bytes": 10.0, "removed_entries": 1.0}, "partly deleted projects/a/d, 10 B, 1 entry"},
		{map[string]any{"state": "done", "path": "projects/a/d", "bytes": 0.0, "recovered": true}, "deleted projects/a/d, 0 B"},
		{map[string]any{"state": "pending", "path": "projects/a/d", "bytes": 8192.0}, "deleting projects/a/d, 8.0 KiB"},
	}
	for _, c := range cases {
		data, _ := json.Marshal(c.payload)
		p, err := journal.Decode(journal.TypeEvicted, data)
		if err != nil {
			t.Fatal(err)
		}
		if got := eventDetail(p); got != c.want {
			t.Errorf("%v: %q, want %q", c.payload, got, c.want)
		}
	}
}
