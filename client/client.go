// Package client is a small Go client of xfsq's HTTP API (`xfsq serve`,
// SPEC §8): typed methods returning the library's own types, and every
// problem answer (RFC 9457) as a *ProblemError a caller can branch on by
// Status or Type.
//
// It owns only the wire: it never imports the server, so that it tests the
// API as any other client would see it, and it never logs or puts its
// token in an error.
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

	"github.com/xfsq/xfsq/health"
	"github.com/xfsq/xfsq/project"
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

// ProblemError is an error answer of the server.
type ProblemError struct {
	Status int    `json:"status"`
	Type   string `json:"type"`
	Title  string `json:"title"`
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

func (e *ProblemError) Error() string {
	msg := fmt.Sprintf("%d %s", e.Status, e.Detail)
	if e.Fix != "" {
		msg += ": " + e.Fix
	}
	return msg
}

// Do sends a request and decodes a 2xx JSON answer into out (nil: the body
// is discarded); any other answer is a *ProblemError.
func (c *Client) Do(ctx context.Context, method, path string, query url.Values, body, out any) error {
	var rd io.Reader
	var header http.Header
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
		header = http.Header{"Content-Type": {"application/json"}}
	}
	resp, err := c.send(ctx, method, path, query, header, rd)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return problemOf(resp.StatusCode, data)
	}
	if out == nil || resp.StatusCode == http.StatusNoContent {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s %s: the answer is not the JSON expected: %w", method, path, err)
	}
	return nil
}

// maxAnswer bounds what the client reads of one answer.
const maxAnswer = 64 << 20

func (c *Client) send(ctx context.Context, method, path string, query url.Values, header http.Header, body io.Reader) (*http.Response, error) {
	u := c.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, err
	}
	for k, vs := range header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	return c.http.Do(req)
}

// problemOf is an error answer as a *ProblemError; a body that is no
// problem (a proxy's page) becomes its detail.
func problemOf(status int, data []byte) *ProblemError {
	p := &ProblemError{}
	if json.Unmarshal(data, p) != nil || p.Status == 0 {
		p = &ProblemError{Status: status, Title: http.StatusText(status), Detail: strings.TrimSpace(string(data))}
	}
	return p
}

const projects = "/v1/workspace/storage/projects/"

func projectPath(name string, rest ...string) string {
	p := projects + url.PathEscape(name)
	for _, r := range rest {
		p += "/" + url.PathEscape(r)
	}
	return p
}

// Limits are a tree's limits in a request (nil: unchanged, or the default).
type Limits struct {
	BytesSoft  *uint64 `json:"bytes_soft,omitempty"`
	BytesHard  *uint64 `json:"bytes_hard,omitempty"`
	InodesSoft *uint64 `json:"inodes_soft,omitempty"`
	InodesHard *uint64 `json:"inodes_hard,omitempty"`
}

// AddProject registers a project (as xfsq project add).
func (c *Client) AddProject(ctx context.Context, name string, workspace, cache Limits) (project.Project, error) {
	var p project.Project
	err := c.Do(ctx, "POST", strings.TrimSuffix(projects, "/"), nil,
		map[string]any{"project": name, "workspace": workspace, "cache": cache}, &p)
	return p, err
}

// SetLimits changes the limits of one tree ("" area: workspace), as project set.
func (c *Client) SetLimits(ctx context.Context, name, area string, l Limits) (project.Project, error) {
	var p project.Project
	body := map[string]any{}
	b, _ := json.Marshal(l)
	json.Unmarshal(b, &body)
	if area != "" {
		body["area"] = area
	}
	err := c.Do(ctx, "PATCH", projectPath(name), nil, body, &p)
	return p, err
}

// RemoveProject removes a project, as project rm.
func (c *Client) RemoveProject(ctx context.Context, name string, o project.RemoveOptions) (project.RemoveResult, error) {
	q := url.Values{}
	for k, v := range map[string]bool{"purge": o.Purge, "force": o.Force, "dry_run": o.DryRun} {
		if v {
			q.Set(k, "1")
		}
	}
	var res project.RemoveResult
	err := c.Do(ctx, "DELETE", projectPath(name), q, nil, &res)
	return res, err
}

// Admission is project check: a deny is an answer, not an error.
func (c *Client) Admission(ctx context.Context, name string, refresh bool) (project.Admission, error) {
	var q url.Values
	if refresh {
		q = url.Values{"refresh": {"1"}}
	}
	var a project.Admission
	err := c.Do(ctx, "GET", projectPath(name, "admission"), q, nil, &a)
	return a, err
}

// Leases lists a project's leases.
func (c *Client) Leases(ctx context.Context, name string) ([]project.LeaseStatus, error) {
	var ls []project.LeaseStatus
	err := c.Do(ctx, "GET", projectPath(name, "leases"), nil, nil, &ls)
	return ls, err
}

// AcquireLease takes or renews a run's lease for ttl (0: the server's default, 2h).
func (c *Client) AcquireLease(ctx context.Context, name, run string, ttl time.Duration) (project.LeaseStatus, error) {
	body := map[string]string{}
	if ttl > 0 {
		body["ttl"] = ttl.String()
	}
	var l project.LeaseStatus
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
}

// Events is one page of the journal, newest first.
func (c *Client) Events(ctx context.Context, q EventQuery) (project.EventPage, error) {
	v := url.Values{}
	for k, s := range map[string]string{"type": q.Type, "project": q.Project, "since": q.Since, "cursor": q.Cursor} {
		if s != "" {
			v.Set(k, s)
		}
	}
	if q.Limit > 0 {
		v.Set("limit", fmt.Sprint(q.Limit))
	}
	var page project.EventPage
	err := c.Do(ctx, "GET", "/v1/workspace/storage/events", v, nil, &page)
	return page, err
}

// Health is the host's health, as xfsq health --json.
func (c *Client) Health(ctx context.Context) (health.Report, error) {
	var r health.Report
	err := c.Do(ctx, "GET", "/v1/system/health", nil, nil, &r)
	return r, err
}

// Healthz is nil when the server is alive.
func (c *Client) Healthz(ctx context.Context) error {
	return c.Do(ctx, "GET", "/healthz", nil, nil, nil)
}

// OpenAPI is the server's OpenAPI 3.1 description of its API (JSON).
func (c *Client) OpenAPI(ctx context.Context) ([]byte, error) {
	a, err := c.Raw(ctx, "GET", "/v1/openapi.json", nil, nil, nil)
	return a.Body, err
}

// Answer is a 2xx or 3xx answer as it came: for those that are not JSON
// (a file, the metrics) or whose status and headers matter (304).
type Answer struct {
	Status int
	Header http.Header
	Body   []byte
}

// Raw sends a request with body as it is (nil: none) and the header
// given, and returns a 2xx or 3xx answer unread by JSON; any other answer
// is a *ProblemError.
func (c *Client) Raw(ctx context.Context, method, path string, query url.Values, header http.Header, body io.Reader) (Answer, error) {
	resp, err := c.send(ctx, method, path, query, header, body)
	if err != nil {
		return Answer{}, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return Answer{}, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 399 {
		return Answer{}, problemOf(resp.StatusCode, data)
	}
	return Answer{Status: resp.StatusCode, Header: resp.Header, Body: data}, nil
}

// Ready is nil when the server says it is ready, else its problem.
func (c *Client) Ready(ctx context.Context) error {
	return c.Do(ctx, "GET", "/readyz", nil, nil, nil)
}
