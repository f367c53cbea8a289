package settings

import (
	"strings"
	"testing"

	"github.com/xfsq/xfsq/errkind"
)

func TestNormalize(t *testing.T) {
	cases := []struct {
		key, in, want, err string
	}{
		{"default_quota", "50GiB", "53687091200", ""},
		{"default_quota", "10g", "10737418240", ""},
		{"default_quota", "lots", "", "KiB/MiB/GiB/TiB"},
		{"cache_min_age", "7d", "1w", ""},
		{"cache_min_age", "36h", "36h", ""},
		{"busy_grace", "soon", "", "s, m, h, d"},
		{"workspace_trash_globs", " *.tmp, dist/ ,,*.log", "*.tmp,dist/,*.log", ""},
		{"workspace_trash_globs", "[", "", "not a valid glob"},
		{"workspace_trash_globs", "../etc", "", "not a valid glob"},
		{"workspace_trash_globs", " , ", "", "at least one"},
		{"snapshot_retention", "35d", "5w", ""},
		{"snapshot_retention", "8d", "8d", ""},
		{"snapshot_retention", "7d", "", "use at least 8d (report's growth_7d_bytes"},
		// A zero that disarms a safety rail needs --allow-zero.
		{"busy_grace", "0s", "", "allow_zero"},
		{"busy_grace", "0", "", "allow_zero"},
		{"busy_grace", "0d", "", "allow_zero"},
		{"reservation_ttl", "0m", "", "allow_zero"},
		{"default_quota", "0", "", "allow_zero"},
		{"busy_grace", "213504d", "", "too long"},
		{"scratch_ttl", "0s", "0s", ""},
		{"plan_max_age", "1h", "1h", ""},
		{"plan_max_age", "30s", "", "use at least 1m"},
		{"plan_max_age", "8d", "", "use at most 1w"},
		{"snapshot_interval", "1h", "1h", ""},
		{"snapshot_interval", "0", "", "use at least 1m"},
		{"snapshot_interval", "2d", "", "use at most 1d"},
		{"refresh_window", "60s", "1m", ""},
		{"refresh_window", "0", "", "use at least 1s"},
		{"refresh_window", "2h", "", "use at most 1h"},
		{"upload_refusal_drain", "8MiB", "8388608", ""},
		{"upload_refusal_drain", "0", "0", ""},
		{"upload_refusal_drain", "lots", "", "upload_refusal_drain"},
		// 0 switches scheduled sweeps off; anything else is at least a minute.
		{"sweep_interval", "0", "0s", ""},
		{"sweep_interval", "6h", "6h", ""},
		{"sweep_interval", "10s", "", "use at least 1m"},
		{"health_disk_free_warn_percent", "15", "15", ""},
		{"health_disk_free_warn_percent", " 7.5% ", "7.5", ""},
		{"health_disk_free_warn_percent", "101", "", "from 0 to 100"},
		{"health_disk_free_warn_percent", "-1", "", "from 0 to 100"},
		{"health_disk_free_critical_percent", "NaN", "", "not a percentage"},
		{"health_load_per_core_warn", "1.50", "1.5", ""},
		{"health_load_per_core_critical", "lots", "", "non-negative number"},
		{"health_load_per_core_critical", "+Inf", "", "non-negative number"},
		{"health_docker_cache_ttl", "2m", "2m", ""},
		{"health_docker_cache_ttl", "500ms", "", "use at least 1s"},
	}
	for _, c := range cases {
		s, err := Lookup(c.key)
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.Normalize(c.in)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error()+": "+errkind.HintOf(err), c.err)):
			t.Errorf("%s=%q: %q, %v; want error containing %q", c.key, c.in, got, err, c.err)
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("%s=%q: %q, %v; want %q", c.key, c.in, got, err, c.want)
		}
	}
	if _, err := Lookup("nope"); err == nil || !strings.Contains(err.Error(), "default_quota") {
		t.Errorf("unknown key: %v; want the known keys listed", err)
	}
}

func TestNormalizeExplicitZero(t *testing.T) {
	for _, key := range []string{"busy_grace", "reservation_ttl", "default_quota"} {
		s, _ := Lookup(key)
		if got, err := s.NormalizeExplicit("0", true); err != nil || (got != "0" && got != "0s") {
			t.Errorf("%s 0 with allowZero: %q, %v", key, got, err)
		}
	}
}

func TestResolve(t *testing.T) {
	s, _ := Lookup("default_quota")
	if v, _ := Resolve(s, "", false); v.Source != "default" || v.Bytes() != 50<<30 {
		t.Errorf("default: %+v", v)
	}
	t.Setenv("KERNEL_STORAGE_DEFAULT_QUOTA_BYTES", "1073741824")
	if v, _ := Resolve(s, "", false); v.Source != "env KERNEL_STORAGE_DEFAULT_QUOTA_BYTES" || v.Bytes() != 1<<30 {
		t.Errorf("env: %+v", v)
	}
	if v, _ := Resolve(s, "2048", true); v.Source != "stored" || v.Bytes() != 2048 {
		t.Errorf("stored beats env: %+v", v)
	}
	t.Setenv("KERNEL_STORAGE_DEFAULT_QUOTA_BYTES", "many")
	if _, err := Resolve(s, "", false); err == nil || !strings.Contains(err.Error(), "KERNEL_STORAGE_DEFAULT_QUOTA_BYTES") {
		t.Errorf("bad env value: %v; want an error naming the variable", err)
	}
	// The environment cannot say a zero is meant: 0 is not "unlimited".
	t.Setenv("KERNEL_STORAGE_DEFAULT_QUOTA_BYTES", "0")
	if _, err := Resolve(s, "", false); err == nil || !strings.Contains(err.Error(), "KERNEL_STORAGE_DEFAULT_QUOTA_BYTES=0: new projects would get no workspace limit") {
		t.Errorf("KERNEL_STORAGE_DEFAULT_QUOTA_BYTES=0: %v; want it refused with the reason", err)
	}
	for _, s := range All {
		if _, err := s.Normalize(s.Default); err != nil {
			t.Errorf("default of %s does not validate: %v", s.Key, err)
		}
	}
}
