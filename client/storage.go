package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/xfsq/xfsq/files"
	"github.com/xfsq/xfsq/project"
)

// Overview is the storage overview (refresh: snapshot every tree first).
// With etag, the ETag of an earlier answer, a 304 gives notModified true
// and no overview. The ETag of the answer is returned for the next call.
func (c *Client) Overview(ctx context.Context, refresh bool, etag string) (ov project.Overview, newETag string, notModified bool, err error) {
	var q url.Values
	if refresh {
		q = url.Values{"refresh": {"1"}}
	}
	var h http.Header
	if etag != "" {
		h = http.Header{"If-None-Match": {etag}}
	}
	a, err := c.Raw(ctx, "GET", "/v1/workspace/storage", q, h, nil)
	if err != nil {
		return ov, "", false, err
	}
	if a.Status == http.StatusNotModified {
		return ov, a.Header.Get("ETag"), true, nil
	}
	err = decode(a, "GET /v1/workspace/storage", &ov)
	return ov, a.Header.Get("ETag"), false, err
}

// ProjectStorage is a project's trees with sizes and mtimes to depth
// (0: the server's default, 3) and their largest files.
func (c *Client) ProjectStorage(ctx context.Context, name string, depth int) (project.ProjectStorage, error) {
	var q url.Values
	if depth != 0 {
		q = url.Values{"depth": {fmt.Sprint(depth)}}
	}
	var d project.ProjectStorage
	err := c.Do(ctx, "GET", projectPath(name), q, nil, &d)
	return d, err
}

// Listing is a directory of a tree.
type Listing struct {
	Project string        `json:"project"`
	Area    string        `json:"area"`
	Path    string        `json:"path"`
	Entries []files.Entry `json:"entries"`
}

func filePath(name, p string) string {
	var parts []string
	for _, s := range strings.Split(strings.Trim(p, "/"), "/") {
		parts = append(parts, url.PathEscape(s))
	}
	return projectPath(name) + "/files/" + strings.Join(parts, "/")
}

func areaQuery(area string) url.Values {
	if area == "" {
		return url.Values{}
	}
	return url.Values{"area": {area}}
}

// ListFiles lists a directory of a project's tree ("" area: workspace).
func (c *Client) ListFiles(ctx context.Context, name, area, dir string) (Listing, error) {
	var l Listing
	err := c.Do(ctx, "GET", filePath(name, dir), areaQuery(area), nil, &l)
	return l, err
}

// GetFile is a file's content (the whole answer; header has Range or
// If-None-Match when given, and the answer's status says 200, 206 or 304).
func (c *Client) GetFile(ctx context.Context, name, area, p string, header http.Header) (Answer, error) {
	return c.Raw(ctx, "GET", filePath(name, p), areaQuery(area), header, nil)
}

// PutFile writes body (size bytes; -1: unknown, sent chunked) to a file of
// a project's tree, replacing it whole or not at all.
func (c *Client) PutFile(ctx context.Context, name, area, p string, body io.Reader, size int64) (files.PutResult, error) {
	var res files.PutResult
	u := c.base + filePath(name, p)
	if q := areaQuery(area); len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, "PUT", u, body)
	if err != nil {
		return res, err
	}
	req.ContentLength = size
	req.Header.Set("Content-Type", "application/octet-stream")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return res, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return res, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return res, problemOf(resp.StatusCode, data)
	}
	err = decode(Answer{Status: resp.StatusCode, Header: resp.Header, Body: data}, "PUT "+filePath(name, p), &res)
	return res, err
}

// DeleteFile deletes a file, or a directory with recursive; journalled.
func (c *Client) DeleteFile(ctx context.Context, name, area, p string, recursive bool) (files.RemoveResult, error) {
	q := areaQuery(area)
	if recursive {
		q.Set("recursive", "1")
	}
	var res files.RemoveResult
	err := c.Do(ctx, "DELETE", filePath(name, p), q, nil, &res)
	return res, err
}

// SweepPlan is a dry run's plan, kept by the server under PlanID until
// ExpiresAt.
type SweepPlan struct {
	PlanID    string    `json:"plan_id"`
	Project   string    `json:"project"`
	DryRun    bool      `json:"dry_run"`
	Areas     []string  `json:"areas"`
	MadeAt    time.Time `json:"made_at"`
	ExpiresAt time.Time `json:"expires_at"`
	Entries   []struct {
		Path      string    `json:"path"`
		Area      string    `json:"area"`
		SizeBytes uint64    `json:"size_bytes"`
		NewestAt  time.Time `json:"newest_at"`
		Reason    string    `json:"reason"`
		Policy    string    `json:"policy"`
	} `json:"entries"`
	PlannedBytes uint64          `json:"planned_bytes"`
	Skipped      []SweepSkip     `json:"skipped"`
	OverSoft     []SweepOverSoft `json:"over_soft"`
}

// SweepSkip is an entry a sweep left alone, with why.
type SweepSkip struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// SweepOverSoft is an area still over its soft limit.
type SweepOverSoft struct {
	Area      string `json:"area"`
	UsedBytes uint64 `json:"used_bytes"`
	SoftBytes uint64 `json:"soft_bytes"`
}

// SweepResult is what a sweep did.
type SweepResult struct {
	SweepID string `json:"sweep_id"`
	PlanID  string `json:"plan_id,omitempty"`
	Project string `json:"project"`
	DryRun  bool   `json:"dry_run"`
	Deleted []struct {
		Path         string `json:"path"`
		FreedBytes   uint64 `json:"freed_bytes"`
		Reason       string `json:"reason"`
		Policy       string `json:"policy"`
		RemovedFiles uint64 `json:"removed_files"`
		Partial      bool   `json:"partial,omitempty"`
	} `json:"deleted"`
	FreedBytes      uint64          `json:"freed_bytes"`
	Skipped         []SweepSkip     `json:"skipped"`
	PerPolicy       map[string]int  `json:"per_policy"`
	OverSoft        []SweepOverSoft `json:"over_soft"`
	DurationSeconds float64         `json:"duration_seconds"`
	SettledPending  int             `json:"settled_pending"`
}

// PlanSweep makes a plan (a dry run) for the areas given (none: all).
func (c *Client) PlanSweep(ctx context.Context, name string, areas ...string) (SweepPlan, error) {
	var p SweepPlan
	err := c.Do(ctx, "POST", projectPath(name, "sweep"), nil, sweepBody(true, areas), &p)
	return p, err
}

func sweepBody(dryRun bool, areas []string) map[string]any {
	b := map[string]any{"dry_run": dryRun}
	if len(areas) > 0 {
		b["areas"] = areas
	}
	return b
}

// ApplySweepPlan applies exactly the reviewed plan planID.
func (c *Client) ApplySweepPlan(ctx context.Context, name, planID string) (SweepResult, error) {
	var r SweepResult
	err := c.Do(ctx, "POST", projectPath(name, "sweep"), nil, map[string]any{"plan_id": planID}, &r)
	return r, err
}

// SweepNow sweeps by policy now, without a reviewed plan.
func (c *Client) SweepNow(ctx context.Context, name string, areas ...string) (SweepResult, error) {
	var r SweepResult
	err := c.Do(ctx, "POST", projectPath(name, "sweep"), nil, sweepBody(false, areas), &r)
	return r, err
}

// Metrics is the Prometheus text exposition.
func (c *Client) Metrics(ctx context.Context) (string, error) {
	a, err := c.Raw(ctx, "GET", "/metrics", nil, nil, nil)
	return string(a.Body), err
}

// decode reads a JSON answer into out.
func decode(a Answer, what string, out any) error {
	if err := json.Unmarshal(a.Body, out); err != nil {
		return fmt.Errorf("%s: the answer is not the JSON expected: %w", what, err)
	}
	return nil
}
