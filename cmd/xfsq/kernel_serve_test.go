package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apiv1 "github.com/xfsq/xfsq/api/v1"
	"github.com/xfsq/xfsq/quota"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/client"
	"github.com/xfsq/xfsq/internal/testsupport/kerneltest"
)

// loopbackUp brings up the loopback interface: the test kernel's init
// leaves it down, and serve listens on 127.0.0.1. Up, the kernel gives it
// 127.0.0.1/8 itself.
func loopbackUp(t *testing.T) {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		t.Fatalf("read the flags of lo: %v", err)
	}
	if ifr.Uint16()&unix.IFF_UP != 0 {
		return
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		t.Fatalf("bring lo up: %v", err)
	}
}

// The real `xfsq serve` on XFS, over HTTP: projects registered through the
// API get kernel limits; once the kernel has stopped a write past one,
// admission says deny and an upload gets 507 while the neighbour's upload
// is taken; and each tree's usage and limits in the project detail (and
// the overview's workspace and cache figures) are xfs_quota's own figures
// for its project ID.
func testXFSServe(t *testing.T, fs *kerneltest.FS) {
	loopbackUp(t)
	s := xfsSandbox(t, fs)
	sv := s.serve(t, operatorTokens(t))
	c := sv.client(e2eToken)
	ctx := context.Background()
	limit := func(n uint64) client.Limits { return client.Limits{}.WithBytesHard(n) }
	if _, err := c.AddProject(ctx, "omni", client.AreaLimits{Workspace: limit(10 * mib)}); err != nil {
		t.Fatalf("add omni over HTTP: %v", err)
	}
	if _, err := c.AddProject(ctx, "other", client.AreaLimits{Workspace: limit(100 * mib)}); err != nil {
		t.Fatalf("add other over HTTP: %v", err)
	}
	written, err := kerneltest.Fill(filepath.Join(s.root, "projects/omni/big"), 20*mib)
	if !errors.Is(err, unix.EDQUOT) && !errors.Is(err, unix.ENOSPC) {
		t.Fatalf("writing 20 MiB into the 10 MiB project registered over HTTP: wrote %d, err %v; want EDQUOT", written, err)
	}
	if a, err := c.Admission(ctx, "omni", false); err != nil || a.Decision != "deny" {
		t.Errorf("admission of the full project: %v %+v, want deny", err, a)
	}
	if a, err := c.Admission(ctx, "other", false); err != nil || a.Decision != "ok" {
		t.Errorf("admission of the neighbour: %v %+v, want ok", err, a)
	}
	body := bytes.Repeat([]byte("u"), mib)
	_, err = c.Upload(ctx, "omni", "", "up", bytes.NewReader(body), int64(len(body)))
	var pe *client.ProblemError
	if !errors.As(err, &pe) || pe.Status != 507 {
		t.Errorf("upload into the full project: %v, want 507", err)
	}
	if res, err := c.Upload(ctx, "other", "", "up", bytes.NewReader(body), int64(len(body))); err != nil || res.WrittenBytes != mib {
		t.Errorf("upload into the neighbour: %v %+v, want 1 MiB written", err, res)
	}

	// The refused upload's temporary file is gone; the kernel frees its
	// blocks in the background (inodegc), so compare once the counts settle.
	var last string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		var st unix.Statfs_t
		unix.Statfs(s.root, &st) // pushes inodegc
		if last = serveReportDiff(t, c, s.root); last == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("the project detail over HTTP differs from xfs_quota:\n%s", last)
			break
		}
	}
}

// serveReportDiff compares every tree of omni and other in the project
// detail, and their lines of the overview, with xfs_quota's report; ""
// when they agree.
func serveReportDiff(t *testing.T, c *client.Client, root string) string {
	t.Helper()
	kernel := kerneltest.ReportBlocks(t, root)
	var diff strings.Builder
	ov, err := c.Overview(context.Background(), false)
	if err != nil {
		t.Fatalf("overview: %v", err)
	}
	lines := map[string]apiv1.ProjectOverview{}
	for _, p := range ov.Projects {
		lines[p.Project] = p
	}
	for _, name := range []string{"omni", "other"} {
		d, err := c.ProjectStorage(context.Background(), name, 1)
		if err != nil {
			t.Fatalf("project detail of %s: %v", name, err)
		}
		if len(d.Trees) != len(area.OfProject) {
			t.Fatalf("project detail of %s has %d trees, want %d", name, len(d.Trees), len(area.OfProject))
		}
		for _, tr := range d.Trees {
			k, ok := kernel[quota.ProjectID(tr.ProjectID)]
			got := [3]uint64{tr.UsedBytes, tr.BytesSoft, tr.BytesHard}
			if !ok || got != k || d.Backend.Kind != kernelKind(root) {
				fmt.Fprintf(&diff, "%s/%s (ID %d): API used/soft/hard %v (backend %s), xfs_quota %v (listed %v)\n",
					name, tr.Area, tr.ProjectID, got, d.Backend.Kind, k, ok)
			}
		}
		for _, tr := range d.Trees {
			k := kernel[quota.ProjectID(tr.ProjectID)]
			if name == "omni" && tr.Area == area.Workspace && (tr.BytesHard != 10*mib || tr.UsedBytes < 9*mib) {
				fmt.Fprintf(&diff, "omni's workspace: %+v, want 10 MiB hard and nearly full\n", tr.TreeStatus)
			}
			// The overview's line of the project: its workspace and cache
			// figures are the kernel's too.
			line := lines[name]
			switch tr.Area {
			case area.Workspace:
				if line.WorkspaceBytes != k[0] || line.QuotaBytes != k[2] {
					fmt.Fprintf(&diff, "overview of %s: workspace %d bytes, quota %d; xfs_quota %v\n", name, line.WorkspaceBytes, line.QuotaBytes, k)
				}
			case area.Cache:
				if line.CacheBytes != k[0] {
					fmt.Fprintf(&diff, "overview of %s: cache %d bytes; xfs_quota %v\n", name, line.CacheBytes, k)
				}
			}
		}
	}
	return diff.String()
}

// kernelKind is the backend kind a kernel case's root is to show.
func kernelKind(root string) string {
	if kerneltest.IsExt4(root) {
		return kerneltest.TypeExt4
	}
	return kerneltest.TypeXFS
}
