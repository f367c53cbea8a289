package health

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/xfsq/xfsq/internal/testsupport/prereq"
)

// shortSocketPath is under /tmp: t.TempDir() can exceed the 108 bytes a
// unix socket path may have.
func shortSocketPath(t testing.TB) string {
	dir, err := os.MkdirTemp("", "xh")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "d.sock")
}

// fakeDaemon speaks enough of the Engine API (1.41, the legacy disk-usage
// shape) on a unix socket to count the disk-usage calls a collector makes.
type fakeDaemon struct {
	host    string
	dfCalls atomic.Int64
	dfDelay time.Duration
}

func startFakeDaemon(t testing.TB, dfDelay time.Duration) *fakeDaemon {
	sock := shortSocketPath(t)
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeDaemon{host: "unix://" + sock, dfDelay: dfDelay}
	mux := http.NewServeMux()
	mux.HandleFunc("/_ping", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Api-Version", "1.41")
		io.WriteString(w, "OK")
	})
	mux.HandleFunc("/v1.41/containers/json", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `[{"Id":"a","State":"running"},{"Id":"b","State":"exited"},{"Id":"c","State":"paused"}]`)
	})
	mux.HandleFunc("/v1.41/system/df", func(w http.ResponseWriter, r *http.Request) {
		f.dfCalls.Add(1)
		time.Sleep(f.dfDelay)
		io.WriteString(w, `{"LayersSize":123456789,"Images":[{"Id":"i1","Containers":1,"Size":100,"SharedSize":0}],`+
			`"Containers":[{"Id":"a","State":"running","SizeRw":4096}],`+
			`"Volumes":[{"Name":"v","UsageData":{"Size":8192,"RefCount":1}}],`+
			`"BuildCache":[{"ID":"b","Size":65536,"Shared":false,"InUse":false}]}`)
	})
	srv := &http.Server{Handler: mux}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return f
}

// Two answers within the TTL, even concurrent ones, make one disk-usage
// call; the counts are read every time.
func TestDockerDiskUsageCachedAndSingleFlight(t *testing.T) {
	f := startFakeDaemon(t, 100*time.Millisecond)
	d, err := NewDocker(DockerOptions{Host: f.host, CacheTTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ch, err := New(Options{Docker: d, CPUSampleInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	reports := make([]Report, 4)
	for i := range reports {
		wg.Go(func() { reports[i] = ch.Collect(context.Background()) })
	}
	wg.Wait()
	reports = append(reports, ch.Collect(context.Background())) // and one after, from the cache
	if n := f.dfCalls.Load(); n != 1 {
		t.Errorf("%d disk-usage calls for %d answers within the TTL; want 1", n, len(reports))
	}
	for i, r := range reports {
		p := r.Docker
		if p.Status != OK || p.ImagesBytes != 123456789 || p.Images != 1 || p.ContainersRunning != 2 || p.ContainersTotal != 3 ||
			p.BuildCacheBytes != 65536 || p.VolumesBytes != 8192 || p.ContainersBytes != 4096 || p.DiskUsageAt.IsZero() {
			t.Errorf("answer %d: %+v", i, *p)
		}
	}

	// Past the TTL the next answer asks again.
	d.mu.Lock()
	d.cached.at = time.Now().Add(-2 * time.Minute)
	d.mu.Unlock()
	if r := ch.Collect(context.Background()); r.Docker.Status != OK || f.dfCalls.Load() != 2 {
		t.Errorf("after the TTL: %s, %d calls; want a second call", r.Docker.Status, f.dfCalls.Load())
	}
}

// A daemon that accepts and never replies costs the docker part its budget
// and no more; the rest of the answer arrives on time.
func TestDockerHungDaemonTimesOutAlone(t *testing.T) {
	sock := shortSocketPath(t)
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // held open, never answered
			mu.Unlock()
		}
	}()
	defer func() {
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	}()
	d, err := NewDocker(DockerOptions{Host: "unix://" + sock})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	const budget = 300 * time.Millisecond
	const slack = 150 * time.Millisecond
	ch, err := New(Options{Root: makeRoot(t), Docker: d, Budget: budget, CPUSampleInterval: -1,
		Store: func(context.Context) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now() // monotonic
	r := ch.Collect(context.Background())
	took := time.Since(start)
	if took > budget+slack {
		t.Errorf("Collect took %s; want within the budget %s + %s", took, budget, slack)
	}
	if took < budget-10*time.Millisecond {
		t.Errorf("Collect took %s: the hung daemon cannot have answered before the budget %s", took, budget)
	}
	if p := r.Docker; p.Status != Error || !strings.HasPrefix(p.Error, "docker: ") || !strings.Contains(p.Error, sock) && !strings.Contains(p.Error, "within") || p.Fix == "" {
		t.Errorf("docker part %+v; want an error naming the budget or socket, with a fix", *p)
	}
	if r.Docker.DurationSeconds > (budget + slack).Seconds() {
		t.Errorf("docker part took %gs", r.Docker.DurationSeconds)
	}
	for _, p := range Parts(r) {
		if p.Name != "docker" && p.Status == Error {
			t.Errorf("%s failed beside the hung daemon: %s", p.Name, p.Error)
		}
	}
	if r.CPU.Cores == 0 || r.Memory.TotalBytes == 0 || len(r.Disk.Paths) == 0 || !r.Store.Reachable {
		t.Errorf("the other parts lack figures: cpu %+v memory %+v disk %+v", *r.CPU, *r.Memory, *r.Disk)
	}
	if r.Status != Error {
		t.Errorf("overall %s; want error, the worst part", r.Status)
	}
}

// A socket nobody listens on is "not reachable", with the fix to start the daemon.
func TestDockerNotReachable(t *testing.T) {
	d, err := NewDocker(DockerOptions{Host: "unix://" + shortSocketPath(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	p := measure(context.Background(), time.Second, "docker", d.timeoutFix(), d.collect)
	if p.Status != Error || !strings.Contains(p.Error, "docker: daemon not reachable at unix://") ||
		!strings.Contains(p.Fix, "start the Docker daemon") {
		t.Errorf("%+v", *p)
	}
}

// realDocker returns a client of the machine's Docker engine, or marks the
// test as missing it (a failure under CI=true).
func realDocker(t testing.TB) *client.Client {
	t.Helper()
	if _, err := exec.LookPath("docker"); err != nil {
		prereq.Missing(t, "the docker CLI is missing (the test compares against it): apt-get install docker.io")
	}
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		cli.Close()
		prereq.Missing(t, fmt.Sprintf("Docker daemon not reachable at %s: %v: start it (systemctl start docker, or dockerd &) or set DOCKER_HOST", cli.DaemonHost(), err))
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// buildScratchImage compiles a static binary that sleeps and builds an
// image FROM scratch holding only it: nothing is pulled.
func buildScratchImage(t testing.TB, cli *client.Client, tag string) {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	os.WriteFile(src, []byte("package main\n\nimport \"time\"\n\nfunc main() { time.Sleep(24 * time.Hour) }\n"), 0o644)
	bin := filepath.Join(dir, "sleeper")
	build := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, src)
	build.Dir = dir
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=", "GO111MODULE=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build of the sleeper: %v\n%s", err, out)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	var ctxTar bytes.Buffer
	tw := tar.NewWriter(&ctxTar)
	for _, f := range []struct {
		name string
		mode int64
		data []byte
	}{
		{"Dockerfile", 0o644, []byte("FROM scratch\nCOPY sleeper /sleeper\nENTRYPOINT [\"/sleeper\"]\n")},
		{"sleeper", 0o755, data},
	} {
		tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data)), Typeflag: tar.TypeReg, ModTime: time.Now()})
		tw.Write(f.data)
	}
	tw.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := cli.ImageBuild(ctx, &ctxTar, client.ImageBuildOptions{Tags: []string{tag}, Remove: true, ForceRemove: true})
	if err != nil {
		t.Fatalf("image build: %v", err)
	}
	defer res.Body.Close()
	t.Cleanup(func() {
		cli.ImageRemove(context.Background(), tag, client.ImageRemoveOptions{Force: true, PruneChildren: true})
	})
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var msg struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(sc.Bytes(), &msg) == nil && msg.Error != "" {
			t.Fatalf("image build: %s", msg.Error)
		}
	}
}

// dockerCLI runs the docker CLI and returns its stdout.
func dockerCLI(t testing.TB, args ...string) string {
	t.Helper()
	out, err := exec.Command("docker", args...).Output()
	if err != nil {
		t.Fatalf("docker %s: %v", strings.Join(args, " "), err)
	}
	return string(out)
}

// parseDockerSize reads docker's decimal sizes ("1.23MB", "0B").
func parseDockerSize(s string) (float64, error) {
	s = strings.TrimSpace(s)
	for _, u := range []struct {
		suffix string
		mult   float64
	}{{"TB", 1e12}, {"GB", 1e9}, {"MB", 1e6}, {"kB", 1e3}, {"B", 1}} {
		if num, ok := strings.CutSuffix(s, u.suffix); ok {
			f, err := strconv.ParseFloat(num, 64)
			return f * u.mult, err
		}
	}
	return 0, fmt.Errorf("unknown size %q", s)
}

// Against the machine's Docker engine: an image built here and a container
// running from it show in the docker part as the docker CLI reports them.
func TestDockerRealEngineMatchesCLI(t *testing.T) {
	cli := realDocker(t)
	tag := fmt.Sprintf("xfsq-health-test:%d", time.Now().UnixNano())
	buildScratchImage(t, cli, tag)
	ctx := context.Background()
	created, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{Config: &container.Config{Image: tag},
		HostConfig: &container.HostConfig{NetworkMode: "none"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cli.ContainerRemove(context.Background(), created.ID, client.ContainerRemoveOptions{Force: true})
	})
	if _, err := cli.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
		t.Fatal(err)
	}

	d, err := NewDocker(DockerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ch, err := New(Options{Docker: d, Budget: 30 * time.Second, CPUSampleInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	p := ch.Collect(ctx).Docker
	if p.Status != OK {
		t.Fatalf("docker part: %+v", *p)
	}

	running, err := strconv.Atoi(strings.TrimSpace(func() string {
		out := strings.TrimSpace(dockerCLI(t, "ps", "-q"))
		if out == "" {
			return "0"
		}
		return strconv.Itoa(len(strings.Split(out, "\n")))
	}()))
	if err != nil {
		t.Fatal(err)
	}
	if p.ContainersRunning != running || running < 1 {
		t.Errorf("containers_running %d; docker ps -q lists %d (one of them ours)", p.ContainersRunning, running)
	}
	var images struct{ Size, TotalCount string }
	for line := range strings.Lines(dockerCLI(t, "system", "df", "--format", "{{json .}}")) {
		var row struct{ Type, Size, TotalCount string }
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatalf("docker system df line %q: %v", line, err)
		}
		if row.Type == "Images" {
			images.Size, images.TotalCount = row.Size, row.TotalCount
		}
	}
	cliBytes, err := parseDockerSize(images.Size)
	if err != nil {
		t.Fatal(err)
	}
	// The CLI rounds to about three significant digits.
	if p.ImagesBytes <= 0 || math.Abs(float64(p.ImagesBytes)-cliBytes) > 0.01*cliBytes+1 {
		t.Errorf("images_bytes %d; docker system df says %s", p.ImagesBytes, images.Size)
	}
	if fmt.Sprint(p.Images) != images.TotalCount {
		t.Errorf("images %d; docker system df says %s", p.Images, images.TotalCount)
	}
	t.Logf("images %d (%d bytes; CLI %s), containers %d running of %d", p.Images, p.ImagesBytes, images.Size, p.ContainersRunning, p.ContainersTotal)
}
