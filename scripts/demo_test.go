package scripts_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/xfsq/xfsq/internal/testsupport/prereq"
)

// Where no kernel with XFS quotas can be booted, the demo still runs its
// tour on the fallback backend and says why in a line or two, never with a
// kernel's stack dump.
func TestDemoFallsBackSayingWhy(t *testing.T) {
	if _, err := os.Stat("/proc/fs/xfs/xqm"); err == nil && os.Geteuid() == 0 {
		t.Log("this host's kernel enforces XFS quotas: the demo takes the loopback route, no fallback to check")
		return
	}
	fake := t.TempDir()
	crash := "#!/bin/sh\necho 'userspace - ptrace set fp regs failed, errno = 14'\n" +
		"echo 'Kernel panic - not syncing: Attempted to kill init! exitcode=0x0000000b'\n" +
		"for i in $(seq 90); do echo \"[<ffffffff>] Call Trace line $i\"; done\nexit 1\n"
	if err := os.WriteFile(filepath.Join(fake, "linux.uml"), []byte(crash), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("./demo.sh")
	cmd.Env = append(os.Environ(), "PATH="+fake+":"+os.Getenv("PATH"), "XFSQ_KERNELTEST_ROUTES=uml")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("demo.sh: %v\n%s", err, out)
	}
	s := string(out)
	start := strings.Index(s, "(no kernel with XFS project quotas: no route boots a kernel with XFS quotas: uml: userspace")
	end := strings.Index(s, "(using the fallback backend")
	if start < 0 || end < start {
		t.Fatalf("the demo did not say why it fell back:\n%s", s)
	}
	if why := s[start:end]; strings.Count(why, "\n") > 2 || !strings.Contains(why, "ptrace set fp regs failed") {
		t.Errorf("the reason should be the route's own words in at most two lines, got:\n%s", why)
	}
	if strings.Contains(s, "Call Trace") {
		t.Errorf("the demo printed the kernel's dump:\n%s", s)
	}
	if !strings.Contains(s, `project "omni": ok`) && !strings.Contains(s, "backend: fallback") {
		t.Errorf("the fallback tour did not run:\n%s", s)
	}
	checkTourNarration(t, s)
}

// checkTourNarration holds what every tour says, whatever its backend: each
// step announced before it runs, the limit reached in the journal, and
// where to go next.
func checkTourNarration(t *testing.T, s string) {
	t.Helper()
	for _, want := range []string{"==> [1/3] ", "==> [2/3] building xfsq", "==> [3/3] ", "==> Next steps", "xfsq serve", "Installing on a host"} {
		if !strings.Contains(s, want) {
			t.Errorf("the demo does not say %q:\n%s", want, s)
		}
	}
	events := section(s, "$ xfsq events", "==> Next steps")
	if !regexp.MustCompile(`storage\.quota_exceeded +omni`).MatchString(events) {
		t.Errorf("the events step does not show omni reaching its limit:\n%s", events)
	}
}

// The README's run command shows what xfsq is for, on real project quotas
// (XFS, or ext4 with --fs ext4): the write past omni's limit is stopped by
// the kernel while the neighbour's goes on, the report shows omni full,
// and admission denies it. On ext4 the write runs without
// CAP_SYS_RESOURCE, which would bypass the limit. Where no kernel with the
// filesystem's quotas can run (the demo fell back), the test skips, and
// under CI=true fails.
func TestDemoShowsEnforcement(t *testing.T) {
	for _, tc := range []struct{ fs, refusal, narration string }{
		{"xfs", "No space left on device", `XFS project quotas report a full quota as "No space left on device"`},
		{"ext4", "Disk quota exceeded", `ext4 project quotas report a full quota as "Disk quota exceeded", EDQUOT`},
	} {
		t.Run(tc.fs, func(t *testing.T) {
			out, err := exec.Command("./demo.sh", "--fs", tc.fs).CombinedOutput()
			if err != nil {
				t.Fatalf("demo.sh --fs %s: %v\n%s", tc.fs, err, out)
			}
			s := string(out)
			if strings.Contains(s, "(using the fallback backend") {
				prereq.Missing(t, "the demo found no kernel with "+tc.fs+" project quotas and fell back:\n"+s)
				return
			}
			omni := section(s, "$ write 40 MiB into projects/omni", "$ write 30 MiB into projects/neighbour")
			if !strings.Contains(omni, tc.refusal) {
				t.Errorf("the write past omni's limit was not stopped by the kernel:\n%s", omni)
			}
			if !strings.Contains(omni, tc.narration) {
				t.Errorf("the demo does not say what the kernel's refusal reads as:\n%s", omni)
			}
			if tc.fs == "ext4" && !strings.Contains(omni, "without CAP_SYS_RESOURCE") {
				t.Errorf("the demo does not say the write ran without CAP_SYS_RESOURCE:\n%s", omni)
			}
			checkTourNarration(t, s)
			for _, want := range []string{
				"backend: " + tc.fs,
				"$ write 30 MiB into projects/neighbour\nok\n",
				`project "neighbour": ok (30.0 MiB of 100.0 MiB)`,
				`deny: project "omni": disk quota exceeded (20.0 MiB of 20.0 MiB)`,
				"(exit 3)",
			} {
				if !strings.Contains(s, want) {
					t.Errorf("the demo's output lacks %q:\n%s", want, s)
				}
			}
			report := section(s, "$ xfsq report --refresh", "$ xfsq project check")
			if !regexp.MustCompile(`(?m)^omni +workspace +20\.0 MiB +20\.0 MiB +100\.0%`).MatchString(report) {
				t.Errorf("the report does not show omni's workspace full at 20.0 MiB:\n%s", report)
			}
			if !strings.Contains(s, "(route: ") && !strings.Contains(s, "loopback") && !strings.Contains(s, "/mnt") {
				t.Errorf("the demo did not say where it ran:\n%s", s)
			}
		})
	}
}

// section is the text of s from the line starting with from up to to.
func section(s, from, to string) string {
	i := strings.Index(s, from)
	if i < 0 {
		return ""
	}
	rest := s[i:]
	if j := strings.Index(rest, to); j > 0 {
		return rest[:j]
	}
	return rest
}

// docs/testing.md names every package the test command installs (deps.sh test).
func TestDocsNameWhatTheTestCommandInstalls(t *testing.T) {
	deps, err := os.ReadFile("deps.sh")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^test\) want=\(([^)]*)\)`).FindSubmatch(deps)
	if m == nil {
		t.Fatal("deps.sh has no test) want=(…) line")
	}
	testing, err := os.ReadFile("../docs/testing.md")
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(testing), "`scripts/test.sh [go test flags]` installs `")
	if i < 0 {
		t.Fatal("docs/testing.md does not say what scripts/test.sh installs")
	}
	listed := strings.Fields(strings.SplitN(string(testing[i:]), "`", 5)[3])
	if want := strings.Fields(string(m[1])); strings.Join(listed, " ") != strings.Join(want, " ") {
		t.Errorf("docs/testing.md says test.sh installs %v; deps.sh installs %v", listed, want)
	}
}

// CI runs exactly the README's test command: .ci/run updates apt's lists
// and then hands over to scripts/test.sh, which runs go test ./... with the
// flags it is given (none from CI) and nothing filtered out.
func TestCIRunsTheReadmesTestCommand(t *testing.T) {
	ci, err := os.ReadFile("../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	var cmds []string
	for _, l := range strings.Split(string(ci), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			cmds = append(cmds, l)
		}
	}
	if len(cmds) == 0 || cmds[len(cmds)-1] != "exec scripts/test.sh" || !strings.Contains(string(ci), "apt-get update") {
		t.Errorf(".ci/run must run apt-get update and end with exec scripts/test.sh; it runs %q", cmds)
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^scripts/test\.sh +# every test \(go test \./\.\.\.\)`).Match(readme) {
		t.Error("README's run-and-test block does not give scripts/test.sh as the test command")
	}
	test, err := os.ReadFile("test.sh")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`go test [^\n]*"\$@" \./\.\.\.`).Match(test) {
		t.Error("scripts/test.sh does not run go test over ./... with the flags it is given")
	}
}
