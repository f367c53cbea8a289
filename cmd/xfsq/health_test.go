package main

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xfsq/xfsq/internal/testsupport/kerneltest"
)

// fakeDockerHost serves the few Engine API calls the docker part makes, on
// a unix socket, so that the command's exit code does not depend on the
// machine's containers.
func fakeDockerHost(t *testing.T) string {
	dir, err := os.MkdirTemp("", "xh")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "d.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/_ping", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Api-Version", "1.41")
		io.WriteString(w, "OK")
	})
	mux.HandleFunc("/v1.41/containers/json", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `[{"Id":"a","State":"running"}]`)
	})
	mux.HandleFunc("/v1.41/system/df", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"LayersSize":3221225472,"Images":[{"Id":"i"}],"Containers":[],"Volumes":[],"BuildCache":[]}`)
	})
	srv := &http.Server{Handler: mux}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return "unix://" + sock
}

type healthJSON struct {
	Status    string `json:"status"`
	CheckedAt string `json:"checked_at"`
	Disk      struct {
		Status string `json:"status"`
		Paths  []struct {
			Path       string `json:"path"`
			Area       string `json:"area"`
			TotalBytes uint64 `json:"total_bytes"`
		} `json:"paths"`
	} `json:"disk"`
	CPU struct {
		Status string `json:"status"`
		Cores  int    `json:"cores"`
	} `json:"cpu"`
	Memory struct {
		Status     string `json:"status"`
		TotalBytes uint64 `json:"total_bytes"`
	} `json:"memory"`
	Docker struct {
		Status            string `json:"status"`
		Error             string `json:"error"`
		Fix               string `json:"fix"`
		ImagesBytes       int64  `json:"images_bytes"`
		ContainersRunning int    `json:"containers_running"`
	} `json:"docker"`
	Quota struct {
		Status  string `json:"status"`
		Backend struct {
			Kind     string `json:"kind"`
			Enforced bool   `json:"enforced"`
		} `json:"backend"`
	} `json:"quota"`
	Store struct {
		Status    string `json:"status"`
		Reachable bool   `json:"reachable"`
	} `json:"store"`
}

func TestHealthCommand(t *testing.T) {
	s := fallbackSandbox(t, "")
	// The machine's own load and memory must not decide the exit code here.
	for k, v := range map[string]string{"health_load_per_core_warn": "1000", "health_load_per_core_critical": "1000",
		"health_memory_available_warn_percent": "0", "health_memory_available_critical_percent": "0",
		"health_disk_free_warn_percent": "0", "health_disk_free_critical_percent": "0"} {
		s.ok("settings", "set", k, v)
	}
	decode := func(r result) healthJSON {
		t.Helper()
		var h healthJSON
		if err := json.Unmarshal([]byte(r.stdout), &h); err != nil {
			t.Fatalf("health --json: %v\n%s\n%s", err, r.stdout, r.stderr)
		}
		return h
	}

	s.env = append(s.env, "DOCKER_HOST="+fakeDockerHost(t))
	r := s.run("health", "--json")
	h := decode(r)
	if r.code != 0 || h.Status != "ok" {
		t.Fatalf("healthy host: exit %d, %s\n%s", r.code, h.Status, r.stdout)
	}
	if len(h.Disk.Paths) != 5 || h.Disk.Paths[0].Path != s.root || h.Disk.Paths[0].TotalBytes == 0 || h.CPU.Cores < 1 || h.Memory.TotalBytes == 0 ||
		h.Docker.ImagesBytes != 3<<30 || h.Docker.ContainersRunning != 1 || h.Quota.Backend.Kind != "fallback" || h.Quota.Backend.Enforced ||
		!h.Store.Reachable || !strings.HasSuffix(h.CheckedAt, "Z") {
		t.Errorf("figures: %+v", h)
	}
	text := s.run("health")
	if text.code != 0 || !strings.Contains(text.stdout, "health: ok") || !strings.Contains(text.stdout, "images 3.0 GiB") ||
		!strings.Contains(text.stdout, "backend fallback") || !strings.Contains(text.stdout, "1 running of 1 containers") {
		t.Errorf("text: exit %d\n%s", text.code, text.stdout)
	}

	// A threshold the disk cannot meet makes it critical, and the command fail.
	s.ok("settings", "set", "health_disk_free_warn_percent", "100")
	s.ok("settings", "set", "health_disk_free_critical_percent", "100")
	if r := s.run("health", "--json"); r.code != 1 || decode(r).Disk.Status != "critical" || decode(r).Status != "critical" {
		t.Errorf("disk under the critical threshold: exit %d\n%s", r.code, r.stdout)
	}
	s.ok("settings", "set", "health_disk_free_warn_percent", "0")
	if r := s.run("health"); r.code != 1 || !strings.Contains(r.stderr, "critical must be the lower") {
		t.Errorf("critical above warn: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	s.ok("settings", "set", "health_disk_free_critical_percent", "0")

	// No daemon: the docker part fails alone, with a fix, and the command exits 1.
	s.env = append(s.env, "DOCKER_HOST=unix://"+filepath.Join(t.TempDir(), "none.sock"))
	r = s.run("health", "--json")
	h = decode(r)
	if r.code != 1 || h.Status != "error" || h.Docker.Status != "error" || !strings.Contains(h.Docker.Error, "docker: daemon not reachable at unix://") ||
		!strings.Contains(h.Docker.Fix, "Docker daemon") {
		t.Errorf("no daemon: exit %d, %+v", r.code, h.Docker)
	}
	if h.Disk.Status != "ok" || h.CPU.Status != "ok" || h.Memory.Status != "ok" || h.Quota.Status != "ok" || h.Store.Status != "ok" {
		t.Errorf("the other parts should answer: %+v", h)
	}
	text = s.run("health")
	if text.code != 1 || !strings.Contains(text.stdout, "docker  error     docker: daemon not reachable") || !strings.Contains(text.stdout, "fix: start the Docker daemon") {
		t.Errorf("text without a daemon: exit %d\n%s", text.code, text.stdout)
	}

	if r := s.run("health", "--budget", "0s"); r.code != 2 {
		t.Errorf("--budget 0s: exit %d; want 2", r.code)
	}
}

// On real XFS the quota part reads the kernel's flags now: enforced with
// prjquota, and flagged (with the fix) once the mount stops enforcing.
func testXFSHealthQuota(t *testing.T, fs *kerneltest.FS) {
	s := xfsSandbox(t, fs)
	type quotaJSON struct {
		Quota struct {
			Status  string `json:"status"`
			Fix     string `json:"fix"`
			Backend struct {
				Kind     string `json:"kind"`
				Enforced bool   `json:"enforced"`
			} `json:"backend"`
			Accounting  *bool `json:"accounting"`
			Enforcement *bool `json:"enforcement"`
		} `json:"quota"`
	}
	read := func() quotaJSON {
		t.Helper()
		// Exit 1 is expected here: the test kernel has no Docker daemon.
		r := s.run("health", "--json")
		var h quotaJSON
		if err := json.Unmarshal([]byte(r.stdout), &h); err != nil {
			t.Fatalf("health --json: %v\n%s%s", err, r.stdout, r.stderr)
		}
		return h
	}
	q := read().Quota
	if q.Status != "ok" || q.Backend.Kind != "xfs" || !q.Backend.Enforced || q.Accounting == nil || !*q.Accounting || q.Enforcement == nil || !*q.Enforcement {
		t.Errorf("prjquota: %+v", q)
	}
	fs.Remount("pqnoenforce")
	q = read().Quota
	if q.Status != "warn" || q.Backend.Kind != "fallback" || q.Backend.Enforced || q.Accounting == nil || !*q.Accounting ||
		q.Enforcement == nil || *q.Enforcement || !strings.Contains(q.Fix, "prjquota") {
		t.Errorf("pqnoenforce: %+v", q)
	}
}
