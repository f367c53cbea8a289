package core

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/quota"
)

func TestValidateName(t *testing.T) {
	cases := []struct {
		name string
		ok   bool
	}{
		{"omni", true}, {"a", true}, {"0", true}, {"my-app_2.0", true}, {strings.Repeat("a", 63), true},
		{"", false}, {".", false}, {"..", false}, {"-a", false}, {"_a", false}, {".hidden", false},
		{"Omni", false}, {"a/b", false}, {"a b", false}, {"a\x00b", false}, {strings.Repeat("a", 64), false},
		{"ünï", false}, {"a\n", false},
	}
	for _, c := range cases {
		err := ValidateName(c.name)
		if (err == nil) != c.ok {
			t.Errorf("ValidateName(%q) = %v, want ok=%v", c.name, err, c.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "1-63 characters") {
			t.Errorf("ValidateName(%q) error does not state the rule: %v", c.name, err)
		}
	}
}

// A valid name can never escape its area directory.
func FuzzValidateName(f *testing.F) {
	for _, s := range []string{"omni", "..", "a/../b", "a\x00", strings.Repeat("z", 70)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if ValidateName(name) != nil {
			return
		}
		for _, a := range area.OfProject {
			p := area.TreePath(name, a)
			if filepath.Dir(p) != area.Base(a) || filepath.Base(p) != name || len(name) > 63 {
				t.Fatalf("valid name %q gives tree path %q outside %s/", name, p, area.Base(a))
			}
		}
	})
}

func TestLimitChange(t *testing.T) {
	v := uint64(7)
	base := quota.Limits{BytesSoft: 1, BytesHard: 2, InodesSoft: 3, InodesHard: 4}
	if got := (LimitChange{InodesHard: &v}).Apply(base); got != (quota.Limits{BytesSoft: 1, BytesHard: 2, InodesSoft: 3, InodesHard: 7}) {
		t.Errorf("apply = %+v", got)
	}
	if err := validateLimits("workspace", quota.Limits{BytesSoft: 2, BytesHard: 1}); err == nil {
		t.Error("soft above hard accepted")
	}
	if err := validateLimits("workspace", quota.Limits{BytesSoft: 2}); err != nil {
		t.Errorf("soft without hard refused: %v", err)
	}
}

func TestHolderAlive(t *testing.T) {
	host, _ := os.Hostname()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	me := processHolder()
	pid, start, ok := strings.Cut(strings.TrimSuffix(me, "@"+host), ".")
	if !ok || pid != strconv.Itoa(os.Getpid()) || start == "" {
		t.Fatalf("processHolder() = %q, want pid.start@%s", me, host)
	}
	live, end := BeginOp(context.Background())
	defer end()
	gone, ended := BeginOp(context.Background())
	ended()
	for _, c := range []struct {
		holder string
		alive  bool
	}{
		{me, true},
		{HolderOf(live), true},  // an operation of this process under way
		{HolderOf(gone), false}, // one that ended: its leftovers are clearable now
		{me + "/op-0", false},   // one this process never began
		{fmt.Sprintf("%d.%s@%s/op-1", dead.Process.Pid, start, host), false}, // another process's: that process decides
		{"1234@another-host/op-7", true},
		{pid + "@" + host, true},                 // written before start times: the pid alone decides
		{pid + "." + start + "1@" + host, false}, // this pid, another start: a reused pid
		{fmt.Sprintf("%d@%s", dead.Process.Pid, host), false},
		{fmt.Sprintf("%d.%s@%s", dead.Process.Pid, start, host), false},
		{"1234@another-host", true}, // only that host can tell
		{"", false},
		{"garbage@" + host, false},
	} {
		if got := holderAlive(c.holder); got != c.alive {
			t.Errorf("holderAlive(%q) = %v, want %v", c.holder, got, c.alive)
		}
	}
}

// SUDO_USER comes from the caller's environment: whatever it holds, the
// actor journalled is one line of printable ASCII.
func TestDefaultActorSanitised(t *testing.T) {
	cases := []struct{ sudo, want string }{
		{"alice", "alice (sudo as "},
		{"svc$", "svc$ (sudo as "},
		{"mallory\n2026-12-01 09:00:00  project.removed  omni  root", `"mallory\n2026-12-01 09:00:00  project.removed  omni  root" (sudo as `},
		{"eve\r\x1b[2K", `"eve\r\x1b[2K" (sudo as `},
		{"bob\u2028x", `"bob\u2028x" (sudo as `},
	}
	for _, c := range cases {
		t.Setenv("SUDO_USER", c.sudo)
		got := DefaultActor()
		if !strings.HasPrefix(got, c.want) {
			t.Errorf("SUDO_USER=%q: actor %q, want it to start %q", c.sudo, got, c.want)
		}
		for _, r := range got {
			if r < 0x20 || r > 0x7e {
				t.Errorf("SUDO_USER=%q: actor %q holds %U", c.sudo, got, r)
			}
		}
	}
}
