package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xfsq/xfsq/client"
	"github.com/xfsq/xfsq/internal/testsupport/prereq"
	"github.com/xfsq/xfsq/internal/testsupport/storetest"
	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/store"
)

// The fleet harness (docs/fleet.md#tests-with-real-hosts): each host is a
// network namespace of its own, joined to this one by a veth pair, running
// the built xfsq serve on its own fallback root; PostgreSQL (on 127.0.0.1
// here) is reached through a proxy listening on the host side of each
// veth, where one host's link is cut, refused then blackholed, in the
// middle of a stream of uploads and a sweep, and restored. Only the veth
// addresses and loopback are ever contacted.
var (
	fleetSeed   = flag.Uint64("fleet.seed", 0, "the fleet harness's seed (0: XFSQ_FLEET_SEED, else random; printed for replay)")
	fleetRuns   = flag.Int("fleet.runs", 0, "how many seeds the fleet harness runs (0: 2, or 20 with XFSQ_FLEET_LONG=1)")
	fleetBudget = flag.Duration("fleet.budget", 2*time.Second,
		"the longest an upload may take, cut link or not: the hosts' api_store_budget plus fleetRoundTrip")
)

const (
	fleetHostCount = 2 // host 0 observes, host 1 is cut
	fleetFileSize  = 16 << 10
	fleetHard      = 320 << 10 // omni's workspace hard limit on the cut host: the stream meets it
	fleetCut       = 3500 * time.Millisecond
	// fleetRoundTrip is what an upload may take beside its store calls
	// (the request, its 16 KiB, the answer, under load): the hosts'
	// api_store_budget is the budget less it. The cut lasts longer than
	// the budget, so an upload that waited for the link to come back
	// fails the check.
	fleetRoundTrip = 500 * time.Millisecond
)

func TestFleetPartition(t *testing.T) {
	net := newFleetNet(t)
	seeds := fleetSeeds()
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Logf("replay: go test ./cmd/xfsq -run 'TestFleetPartition' -fleet.seed %d", seed)
			runFleetSeed(t, net, seed)
		})
	}
}

func fleetSeeds() []uint64 {
	if *fleetSeed != 0 {
		return []uint64{*fleetSeed}
	}
	if s, err := strconv.ParseUint(os.Getenv("XFSQ_FLEET_SEED"), 10, 64); err == nil && s != 0 {
		return []uint64{s}
	}
	n := *fleetRuns
	if n == 0 {
		n = 2
		if os.Getenv("XFSQ_FLEET_LONG") == "1" {
			n = 20
		}
	}
	out := make([]uint64, n)
	for i := range out {
		out[i] = rand.Uint64()>>1 + 1
	}
	return out
}

// fleetNet is the namespaces and veth pairs, one per host, and each
// host's link to PostgreSQL (a proxy on the host side of its veth).
type fleetNet struct {
	ns      []string
	hostIP  []string // the root namespace's end of each veth
	nsIP    []string // the host's end
	links   []*linkProxy
	pgBase  string
	pgAddrs string
}

func newFleetNet(t *testing.T) *fleetNet {
	if os.Geteuid() != 0 {
		prereq.Missing(t, "the fleet harness makes network namespaces: run it as root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		prereq.Missing(t, "the fleet harness needs ip (iproute2): apt-get install iproute2")
	}
	base := os.Getenv(storetest.EnvPostgres)
	if base == "" {
		prereq.Missing(t, "the fleet harness needs PostgreSQL: set "+storetest.EnvPostgres)
	}
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		t.Fatalf("%s is not a postgres:// URL with a host: the harness proxies it", storetest.EnvPostgres)
	}
	n := &fleetNet{pgBase: base, pgAddrs: u.Host}
	tag := fmt.Sprintf("%04x", os.Getpid()&0xffff)
	subnets := freeFleetSubnets(t, fleetHostCount)
	for i := range fleetHostCount {
		ns, veth, peer := "xfsqf-"+tag+"-"+strconv.Itoa(i), "xqh"+tag+strconv.Itoa(i), "xqn"+tag+strconv.Itoa(i)
		hostIP, nsIP := fmt.Sprintf("10.213.%d.1", subnets[i]), fmt.Sprintf("10.213.%d.2", subnets[i])
		if err := ipRun("netns", "add", ns); err != nil {
			prereq.Missing(t, "network namespaces are not available here ("+err.Error()+"): the fleet harness needs ip netns")
		}
		t.Cleanup(func() { ipRun("netns", "del", ns) })
		for _, args := range [][]string{
			{"link", "add", veth, "type", "veth", "peer", "name", peer},
			{"link", "set", peer, "netns", ns},
			{"addr", "add", hostIP + "/30", "dev", veth},
			{"link", "set", veth, "up"},
			{"-n", ns, "addr", "add", nsIP + "/30", "dev", peer},
			{"-n", ns, "link", "set", peer, "up"},
			{"-n", ns, "link", "set", "lo", "up"},
		} {
			if err := ipRun(args...); err != nil {
				t.Fatal(err)
			}
		}
		lp, err := newLinkProxy(net.JoinHostPort(hostIP, "15432"), u.Host)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(lp.close)
		n.ns, n.hostIP, n.nsIP, n.links = append(n.ns, ns), append(n.hostIP, hostIP), append(n.nsIP, nsIP), append(n.links, lp)
	}
	return n
}

// freeFleetSubnets picks n subnets 10.213.X.0/30 that no interface holds
// an address in: a run killed before its cleanup (a CI job cancelled, a
// test binary killed) leaves its namespaces and veths, and a second veth
// with the same address sends the hosts' traffic to a namespace nobody
// serves. Each run starts its search at a place of its own, so that two at
// once rarely meet.
func freeFleetSubnets(t *testing.T, n int) []int {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	used := map[int]bool{}
	for _, a := range addrs {
		if ip, ok := a.(*net.IPNet); ok {
			if v4 := ip.IP.To4(); v4 != nil && v4[0] == 10 && v4[1] == 213 {
				used[int(v4[2])] = true
			}
		}
	}
	var free []int
	for k, start := 0, os.Getpid()%256; k < 256 && len(free) < n; k++ {
		if x := (start + k) % 256; !used[x] {
			free = append(free, x)
		}
	}
	if len(free) < n {
		t.Fatalf("no %d free subnets in 10.213.0.0/16: namespaces left by killed runs? ip netns list | grep xfsqf-, then ip netns del each", n)
	}
	return free
}

func ipRun(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

// fleetHost is one host of a seed's run: its root, its serve in its
// namespace, and clients that reach it through its veth.
type fleetHost struct {
	name, root, api string
	cli             *testRoot // the CLI on the loopback DSN, for setup
	op, reader      *client.Client
	serve           *exec.Cmd
}

const (
	fleetOpToken     = "op-fleet-0123456789abcdef"
	fleetReaderToken = "rd-fleet-0123456789abcdef"
)

func startFleetHost(t *testing.T, n *fleetNet, i int, dsn string) *fleetHost {
	h := &fleetHost{name: "fleet-" + strconv.Itoa(i), root: t.TempDir()}
	h.cli = newSandbox(t, h.root, dsn)
	h.cli.env = []string{"XFSQ_HOST=" + h.name}
	h.cli.ok("init")
	storeBudget := (*fleetBudget - fleetRoundTrip).String()
	for _, kv := range [][2]string{{"fleet_heartbeat_interval", "1s"}, {"fleet_stale_after", "2s"}, {"busy_grace", "1h"}, {"api_store_budget", storeBudget}} {
		h.cli.ok("settings", "set", kv[0], kv[1])
	}
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	os.WriteFile(tokens, []byte(fleetOpToken+",ops,operator\n"+fleetReaderToken+",dash,reader\n"), 0o600)
	u, _ := url.Parse(dsn)
	u.Host = net.JoinHostPort(n.hostIP[i], "15432") // through this host's link
	listen := net.JoinHostPort(n.nsIP[i], "9742")
	h.serve = exec.Command("ip", "netns", "exec", n.ns[i], os.Getenv(envBinary), "--root", h.root, "--db", u.String(), "--host", h.name,
		"serve", "--listen", listen, "--insecure-listen", "--token-file", tokens, "--grace", "2s")
	var log bytes.Buffer
	h.serve.Stdout, h.serve.Stderr = &log, &log
	if err := h.serve.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		h.serve.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { h.serve.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			h.serve.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("%s's log:\n%s", h.name, tail(log.String(), 4000))
		}
	})
	h.api = "http://" + listen
	hc := &http.Client{Timeout: *fleetBudget + 30*time.Second}
	h.op, h.reader = client.New(h.api, fleetOpToken, hc), client.New(h.api, fleetReaderToken, hc)
	waitFor(t, 15*time.Second, h.name+" to answer", func() bool {
		_, err := h.reader.FleetHosts(context.Background())
		return err == nil
	})
	return h
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

func waitFor(t *testing.T, d time.Duration, what string, ok func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for time.Since(start) < d {
		if ok() {
			return time.Since(start)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("waited %s for %s", d, what)
	return 0
}

// fleetState says whether host is stale in observer's fleet view; an
// error (the observer's own store link) counts as not known.
func fleetState(observer *fleetHost, host string) (stale, known bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	f, err := observer.reader.FleetHosts(ctx)
	if err != nil {
		return false, false
	}
	for _, h := range f.Hosts {
		if h.Host == host {
			return h.Stale, true
		}
	}
	return false, false
}

// uploadLog is every upload of the stream: what it got, how long it took,
// and under which state of the link.
type uploadLog struct {
	mu    sync.Mutex
	phase string
	done  []upload
	holes [][2]time.Time // when the link was blackholed
}

type upload struct {
	path       string
	status     int
	start      time.Time
	took       time.Duration
	phase      string
	blackholed bool // the link was blackholed at some point of it
}

func (l *uploadLog) setPhase(p string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if p == linkBlackholed.String() {
		l.holes = append(l.holes, [2]time.Time{now, {}})
	} else if n := len(l.holes); n > 0 && l.holes[n-1][1].IsZero() {
		l.holes[n-1][1] = now
	}
	l.phase = p
}

// markBlackholed marks the uploads that overlapped a blackhole.
func (l *uploadLog) markBlackholed() {
	for i, u := range l.done {
		for _, h := range l.holes {
			end := u.start.Add(u.took)
			if u.start.Before(h[1]) && end.After(h[0]) || (h[1].IsZero() && end.After(h[0])) {
				l.done[i].blackholed = true
			}
		}
	}
}

func (l *uploadLog) add(u upload) { l.mu.Lock(); l.done = append(l.done, u); l.mu.Unlock() }

// streamUploads PUTs fleetFileSize files into omni's uploads one after
// another until ctx ends, each noting the link's state when it started.
func streamUploads(ctx context.Context, h *fleetHost, l *uploadLog) {
	body := bytes.Repeat([]byte("x"), fleetFileSize)
	hc := &http.Client{Timeout: *fleetBudget + 30*time.Second}
	for i := 0; ctx.Err() == nil; i++ {
		path := fmt.Sprintf("uploads/u-%04d.bin", i)
		req, _ := http.NewRequest("PUT", h.api+"/v1/workspace/storage/projects/omni/files/"+path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+fleetOpToken)
		l.mu.Lock()
		phase := l.phase
		l.mu.Unlock()
		start := time.Now()
		resp, err := hc.Do(req)
		u := upload{path: path, start: start, took: time.Since(start), phase: phase}
		if err == nil {
			u.status = resp.StatusCode
			resp.Body.Close()
		}
		l.add(u)
		time.Sleep(30 * time.Millisecond)
	}
}

// fleetTree makes the cut host's trees: omni's workspace with trash a
// sweep deletes and files it must keep; held's trash, protected by a lease.
func fleetTree(t *testing.T, h *fleetHost) (trash, kept []string) {
	h.cli.ok("project", "add", "omni", "--bytes-hard", strconv.Itoa(fleetHard>>10)+"k")
	h.cli.ok("project", "add", "held", "--bytes-hard", "1m")
	old := time.Now().Add(-30 * 24 * time.Hour)
	put := func(rel string) {
		p := filepath.Join(h.root, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, bytes.Repeat([]byte("t"), fleetFileSize), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, old, old)
	}
	for i := range 8 {
		trash = append(trash, fmt.Sprintf("projects/omni/trash-%d.tmp", i))
		put(trash[i])
	}
	for _, rel := range []string{"projects/omni/keep-0.txt", "projects/omni/keep-1.txt", "projects/held/trash-0.tmp", "projects/held/trash-1.tmp"} {
		kept = append(kept, rel)
		put(rel)
	}
	h.cli.ok("snapshot", "--all") // the fallback counts what the walk finds
	return trash, kept
}

func runFleetSeed(t *testing.T, n *fleetNet, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	dsn := storetest.Postgres(t)
	for _, l := range n.links {
		l.set(linkUp)
	}
	observer := startFleetHost(t, n, 0, dsn)
	cut := startFleetHost(t, n, 1, dsn)
	link := n.links[1]
	trash, kept := fleetTree(t, cut)
	ctx := context.Background()
	if _, err := cut.op.AcquireLease(ctx, "held", "run-1", time.Hour); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the cut host to be fresh before the cut", func() bool {
		stale, known := fleetState(observer, cut.name)
		return known && !stale
	})

	uploads := &uploadLog{phase: "up"}
	sctx, stopStream := context.WithCancel(ctx)
	streamDone := make(chan struct{})
	go func() { defer close(streamDone); streamUploads(sctx, cut, uploads) }()
	usage := watchUsage(sctx, filepath.Join(cut.root, "projects", "omni"))

	// The sweep starts at a random point of the stream, the cut at a
	// random point after it (the sweep may be over by then, or not).
	sweepAfter := time.Duration(200+rng.IntN(1300)) * time.Millisecond
	time.Sleep(sweepAfter)
	sweepDone := make(chan error, 1)
	go func() { _, err := cut.op.SweepNow(ctx, "omni"); sweepDone <- err }()
	cutAfter := time.Duration(rng.IntN(1000)) * time.Millisecond
	time.Sleep(cutAfter)
	order := []linkMode{linkRefused, linkBlackholed}
	if rng.IntN(2) == 1 {
		order[0], order[1] = order[1], order[0]
	}
	t.Logf("seed %d: sweep %s into the stream, cut %s after it: %s then %s", seed, sweepAfter, cutAfter, order[0], order[1])
	for _, mode := range order {
		uploads.setPhase(mode.String())
		link.set(mode)
		waited := waitFor(t, fleetCut+5*time.Second, cut.name+" stale in the fleet view while "+mode.String(), func() bool {
			stale, known := fleetState(observer, cut.name)
			return known && stale
		})
		time.Sleep(max(fleetCut-waited, 0))
		link.set(linkUp)
		uploads.setPhase("restored after " + mode.String())
		waitFor(t, 15*time.Second, cut.name+" fresh again after "+mode.String(), func() bool {
			stale, known := fleetState(observer, cut.name)
			return known && !stale
		})
	}
	uploads.setPhase("up")
	time.Sleep(500 * time.Millisecond)
	stopStream()
	<-streamDone
	maxUsage := <-usage
	if err := <-sweepDone; err != nil {
		t.Logf("the sweep the cut met: %v", err) // it may fail; its records must not
	}
	// A sweep with the link up settles what the cut one left pending.
	for _, p := range []string{"omni", "held"} {
		if _, err := cut.op.SweepNow(ctx, p); err != nil {
			t.Fatalf("the sweep of %s after the link came back: %v", p, err)
		}
	}
	checkFleetRun(t, cut, dsn, trash, kept, uploads, maxUsage)
}

// watchUsage samples the bytes of files under dir every 50 ms until ctx
// ends, and sends the most it saw.
func watchUsage(ctx context.Context, dir string) <-chan int64 {
	out := make(chan int64, 1)
	go func() {
		var most int64
		for ctx.Err() == nil {
			var sum int64
			filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
				if err == nil && fi.Mode().IsRegular() {
					sum += fi.Size()
				}
				return nil
			})
			most = max(most, sum)
			time.Sleep(50 * time.Millisecond)
		}
		out <- most
	}()
	return out
}

func checkFleetRun(t *testing.T, h *fleetHost, dsn string, trash, kept []string, uploads *uploadLog, maxUsage int64) {
	ctx := context.Background()
	st, err := store.Open(ctx, dsn, h.name)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	evs, err := st.Events(ctx, store.EventFilter{Type: journal.TypeEvicted, Limit: 100000})
	if err != nil {
		t.Fatal(err)
	}
	// Events exactly once: one record per (deletion, state), and every
	// pending one settled exactly once.
	seen, settled := map[string]int{}, map[string]string{}
	for _, e := range evs {
		var rec journal.Evicted
		json.Unmarshal(e.Payload, &rec)
		key := rec.SweepID + "|" + rec.Path + "|" + rec.DeletionID
		seen[key+"|"+rec.State]++
		if rec.State != journal.StatePending {
			if prev, ok := settled[key]; ok {
				t.Errorf("deletion %s settled twice: %s and %s", key, prev, rec.State)
			}
			settled[key] = rec.State
		}
	}
	for k, c := range seen {
		if c != 1 {
			t.Errorf("record %s journalled %d times", k, c)
		}
	}
	for k := range seen {
		if strings.HasSuffix(k, "|"+journal.StatePending) {
			if _, ok := settled[strings.TrimSuffix(k, "|"+journal.StatePending)]; !ok {
				t.Errorf("deletion %s still pending after the link came back and a sweep ran", k)
			}
		}
	}
	if p, _ := st.PendingEvictions(ctx); len(p) != 0 {
		t.Errorf("pending deletions left: %+v", p)
	}
	// Every deleted path has its record; nothing protected went.
	done := map[string]bool{}
	for k, s := range settled {
		if s == journal.StateDone {
			done[strings.Split(k, "|")[1]] = true
		}
	}
	for _, rel := range trash {
		if _, err := os.Lstat(filepath.Join(h.root, rel)); err == nil {
			t.Errorf("%s, trash, is still there after a sweep with the link up", rel)
		} else if !done[rel] {
			t.Errorf("%s was deleted with no storage.evicted done record", rel)
		}
	}
	for _, rel := range kept {
		if _, err := os.Lstat(filepath.Join(h.root, rel)); err != nil {
			t.Errorf("%s, protected, was deleted: %v", rel, err)
		}
	}
	uploads.mu.Lock()
	defer uploads.mu.Unlock()
	uploads.markBlackholed()
	var stored, refused, failed int
	slowest := map[string]time.Duration{}
	for _, u := range uploads.done {
		switch {
		case u.status == http.StatusCreated:
			stored++
			if _, err := os.Lstat(filepath.Join(h.root, "projects/omni", u.path)); err != nil {
				t.Errorf("upload %s was answered 201 but is not there: %v", u.path, err)
			}
		case u.status == http.StatusInsufficientStorage:
			refused++
		default:
			failed++
		}
		phase := u.phase
		if u.blackholed {
			phase = "met a blackhole"
		}
		slowest[phase] = max(slowest[phase], u.took.Round(time.Millisecond))
		if u.took > *fleetBudget {
			t.Errorf("upload %s (link %s) waited %s, past the budget of %s (status %d)", u.path, u.phase, u.took.Round(time.Millisecond), *fleetBudget, u.status)
		}
	}
	t.Logf("uploads: %d stored, %d refused over the limit, %d failed; slowest by link state: %v", stored, refused, failed, slowest)
	if stored == 0 {
		t.Error("no upload was stored: the stream measured nothing")
	}
	// Fallback usage never passed the limit (the files' own bytes, which
	// admission counts at least).
	if maxUsage > fleetHard {
		t.Errorf("omni's workspace held %d bytes at its most, over its hard limit of %d", maxUsage, fleetHard)
	}
}
