// Package client is a small Go client of xfsq's HTTP API (`xfsq serve`,
// docs/api.md): typed methods returning the wire's types (api/v1), and every
// problem answer (RFC 9457) as a *ProblemError a caller can branch on by
// Status or Type.
//
// It owns only the wire: it imports nothing of xfsq but api/v1 (and what
// that leaf imports), so that a service that takes it as a module links no
// store, driver, kernel backend or Docker SDK (a test holds its
// dependencies), and it never imports the server, so that it tests the API
// as any other client would see it. It never logs or puts its token in an
// error.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	apiv1 "github.com/xfsq/xfsq/api/v1"
)

// Client talks to one server with one token.
type Client struct {
	base  string
	token string
	http  *http.Client
}

// New is a client of the server at baseURL (e.g. http://127.0.0.1:9742)
// authenticating with token ("" for none); hc nil is http.DefaultClient.
func New(baseURL, token string, hc *http.Client) *Client {
	if hc == nil {
		hc = http.DefaultClient
	}
	return &Client{base: strings.TrimRight(baseURL, "/"), token: token, http: hc}
}

// ProblemError is an error answer of the server (apiv1.Problem).
type ProblemError = apiv1.Problem

// Do sends a request and decodes a 2xx JSON answer into out (nil: the body
// is discarded); any other answer is a *ProblemError.
func (c *Client) Do(ctx context.Context, method, path string, query url.Values, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	u := c.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return c.send(req, out)
}

// maxAnswer bounds what the client reads of one answer: more is an error,
// never a body silently cut short.
const maxAnswer = 64 << 20

// exchange sends req with the token and reads the answer whole: a status
// above okMax is a *ProblemError.
func (c *Client) exchange(req *http.Request, okMax int) (*http.Response, []byte, error) {
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err != nil {
		return nil, nil, err
	}
	if len(data) > maxAnswer {
		return nil, nil, fmt.Errorf("%s %s: the answer is over %d MiB, more than this client reads", req.Method, req.URL.Path, maxAnswer>>20)
	}
	if resp.StatusCode < 200 || resp.StatusCode > okMax {
		p := &ProblemError{}
		if json.Unmarshal(data, p) != nil || p.Status == 0 {
			p = &ProblemError{Status: resp.StatusCode, Title: http.StatusText(resp.StatusCode), Detail: strings.TrimSpace(string(data))}
		}
		return nil, nil, p
	}
	return resp, data, nil
}

// send sends req with the token and decodes the answer as Do does.
func (c *Client) send(req *http.Request, out any) error {
	method, path := req.Method, req.URL.Path
	resp, data, err := c.exchange(req, 299)
	if err != nil {
		return err
	}
	if out == nil || resp.StatusCode == http.StatusNoContent {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s %s: the answer is not the JSON expected: %w", method, path, err)
	}
	return nil
}

const projects = "/v1/workspace/storage/projects/"

func projectPath(name string, rest ...string) string {
	p := projects + url.PathEscape(name)
	for _, r := range rest {
		p += "/" + url.PathEscape(r)
	}
	return p
}

// Limits are a tree's limits in a request (nil: unchanged, or the
// default): Limits{}.WithBytesHard(10 << 30) sets one.
type Limits = apiv1.Limits

// ListProjects lists the projects the token may see, as project list,
// without their usage.
func (c *Client) ListProjects(ctx context.Context) ([]apiv1.ProjectRecord, error) {
	var ps []apiv1.ProjectRecord
	err := c.Do(ctx, "GET", strings.TrimSuffix(projects, "/"), nil, nil, &ps)
	return ps, err
}

// AreaLimits are a new project's limits per area (an area left zero: the
// installation's default): AreaLimits{Workspace: Limits{}.WithBytesHard(10 << 30)}.
type AreaLimits = apiv1.AreaLimits

// AddProject registers a project (as xfsq project add) with the limits
// given of each area.
func (c *Client) AddProject(ctx context.Context, name string, limits AreaLimits) (apiv1.Project, error) {
	var p apiv1.Project
	err := c.Do(ctx, "POST", strings.TrimSuffix(projects, "/"), nil, apiv1.AddRequest{Project: name, AreaLimits: limits}, &p)
	return p, err
}

// SetLimits changes the limits of one tree ("" area: workspace), as project set.
func (c *Client) SetLimits(ctx context.Context, name, area string, l Limits) (apiv1.Project, error) {
	var p apiv1.Project
	err := c.Do(ctx, "PATCH", projectPath(name), nil, apiv1.SetRequest{Area: area, Limits: l}, &p)
	return p, err
}

// RemoveOptions say how a project is removed, as project rm's flags.
type RemoveOptions struct {
	// Purge deletes the project's trees too, each deletion journalled.
	Purge bool
	// Force removes it although a run holds an unexpired lease.
	Force bool
	// DryRun changes nothing and says what the removal would do.
	DryRun bool
}

// RemoveProject removes a project, as project rm.
func (c *Client) RemoveProject(ctx context.Context, name string, o RemoveOptions) (apiv1.RemoveResult, error) {
	q := url.Values{}
	for k, v := range map[string]bool{"purge": o.Purge, "force": o.Force, "dry_run": o.DryRun} {
		if v {
			q.Set(k, "1")
		}
	}
	var res apiv1.RemoveResult
	err := c.Do(ctx, "DELETE", projectPath(name), q, nil, &res)
	return res, err
}

// Admission is project check: a deny is an answer, not an error.
func (c *Client) Admission(ctx context.Context, name string, refresh bool) (apiv1.Admission, error) {
	var q url.Values
	if refresh {
		q = url.Values{"refresh": {"1"}}
	}
	var a apiv1.Admission
	err := c.Do(ctx, "GET", projectPath(name, "admission"), q, nil, &a)
	return a, err
}

// Leases lists a project's leases.
func (c *Client) Leases(ctx context.Context, name string) ([]apiv1.Lease, error) {
	var ls []apiv1.Lease
	err := c.Do(ctx, "GET", projectPath(name, "leases"), nil, nil, &ls)
	return ls, err
}

// AcquireLease takes or renews a run's lease for ttl (0: the server's default, 2h).
func (c *Client) AcquireLease(ctx context.Context, name, run string, ttl time.Duration) (apiv1.Lease, error) {
	var body apiv1.LeaseRequest
	if ttl > 0 {
		body.TTL = ttl.String()
	}
	var l apiv1.Lease
	err := c.Do(ctx, "POST", projectPath(name, "leases", run), nil, body, &l)
	return l, err
}

// ReleaseLease drops a run's lease.
func (c *Client) ReleaseLease(ctx context.Context, name, run string) error {
	return c.Do(ctx, "DELETE", projectPath(name, "leases", run), nil, nil, nil)
}

// EventQuery selects journal records (zero fields: no filter).
type EventQuery struct {
	Type, Project string
	Since         string // a duration ago ("24h") or an RFC 3339 time
	Limit         int
	Cursor        string // EventPage.Next of the previous page
	// Hosts reads these hosts' records instead of the server's own;
	// AllHosts every host's.
	Hosts    []string
	AllHosts bool
}

// Events is one page of the journal, newest first.
func (c *Client) Events(ctx context.Context, q EventQuery) (apiv1.EventPage, error) {
	v := url.Values{}
	for k, s := range map[string]string{"type": q.Type, "project": q.Project, "since": q.Since, "cursor": q.Cursor} {
		if s != "" {
			v.Set(k, s)
		}
	}
	if q.Limit > 0 {
		v.Set("limit", fmt.Sprint(q.Limit))
	}
	for _, h := range q.Hosts {
		v.Add("host", h)
	}
	if q.AllHosts {
		v.Set("all_hosts", "true")
	}
	var page apiv1.EventPage
	err := c.Do(ctx, "GET", "/v1/workspace/storage/events", v, nil, &page)
	return page, err
}

// Health is the host's health, as xfsq health --json.
func (c *Client) Health(ctx context.Context) (apiv1.Health, error) {
	var r apiv1.Health
	err := c.Do(ctx, "GET", "/v1/system/health", nil, nil, &r)
	return r, err
}

// Overview is the storage overview (GET /v1/workspace/storage); refresh
// snapshots every tree first.
func (c *Client) Overview(ctx context.Context, refresh bool) (apiv1.Overview, error) {
	var q url.Values
	if refresh {
		q = url.Values{"refresh": {"1"}}
	}
	var ov apiv1.Overview
	err := c.Do(ctx, "GET", "/v1/workspace/storage", q, nil, &ov)
	return ov, err
}

// ProjectStorage is one project's detail: its trees with usage, limits and
// the last snapshot to depth (0: the server's default).
func (c *Client) ProjectStorage(ctx context.Context, name string, depth int) (apiv1.ProjectStorage, error) {
	var q url.Values
	if depth > 0 {
		q = url.Values{"depth": {fmt.Sprint(depth)}}
	}
	var d apiv1.ProjectStorage
	err := c.Do(ctx, "GET", projectPath(name), q, nil, &d)
	return d, err
}

// Upload writes size bytes from body to path in a project's tree ("" area:
// the workspace), as files put; size < 0 sends the body chunked. A refusal
// is a *ProblemError (507 over the quota, 413 over max_file_bytes).
func (c *Client) Upload(ctx context.Context, name, area, path string, body io.Reader, size int64) (apiv1.PutResult, error) {
	u := c.base + filePath(name, path)
	if q := areaQuery(area); len(q) > 0 {
		u += "?" + q.Encode()
	}
	var res apiv1.PutResult
	req, err := http.NewRequestWithContext(ctx, "PUT", u, body)
	if err != nil {
		return res, err
	}
	req.ContentLength = size
	if size == 0 {
		req.Body = http.NoBody // sends Content-Length: 0
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	err = c.send(req, &res)
	return res, err
}

// The sweep's answers, as the wire declares them.
type (
	SweepPlan     = apiv1.SweepPlan
	SweepResult   = apiv1.SweepResult
	SweepSkip     = apiv1.SweepSkip
	SweepOverSoft = apiv1.OverSoft
)

// PlanSweep makes a sweep plan of a project's areas (none: all) without deleting.
func (c *Client) PlanSweep(ctx context.Context, name string, areas ...string) (SweepPlan, error) {
	var p SweepPlan
	dry := true
	err := c.Do(ctx, "POST", projectPath(name, "sweep"), nil, apiv1.SweepRequest{DryRun: &dry, Areas: areas}, &p)
	return p, err
}

// ApplyPlan deletes exactly what the reviewed plan planID lists.
func (c *Client) ApplyPlan(ctx context.Context, name, planID string) (SweepResult, error) {
	var r SweepResult
	err := c.Do(ctx, "POST", projectPath(name, "sweep"), nil, apiv1.SweepRequest{PlanID: planID}, &r)
	return r, err
}

// Ready is nil when the server says it is ready, else its problem.
func (c *Client) Ready(ctx context.Context) error {
	return c.Do(ctx, "GET", "/readyz", nil, nil, nil)
}
