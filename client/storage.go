package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	apiv1 "github.com/xfsq/xfsq/api/v1"
)

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
	u := c.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return Answer{}, err
	}
	for k, vs := range header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	resp, data, err := c.exchange(req, 399)
	if err != nil {
		return Answer{}, err
	}
	return Answer{Status: resp.StatusCode, Header: resp.Header, Body: data}, nil
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

// Metrics is the Prometheus text exposition of GET /metrics.
func (c *Client) Metrics(ctx context.Context) (string, error) {
	a, err := c.Raw(ctx, "GET", "/metrics", nil, nil, nil)
	return string(a.Body), err
}

// OverviewIfChanged is the overview unless it is still the one etag (an
// ETag of an earlier answer; "" for none) names: then notModified, from
// the server's 304, and no overview. The answer's ETag is returned for the
// next call.
func (c *Client) OverviewIfChanged(ctx context.Context, etag string) (ov apiv1.Overview, newETag string, notModified bool, err error) {
	var h http.Header
	if etag != "" {
		h = http.Header{"If-None-Match": {etag}}
	}
	a, err := c.Raw(ctx, "GET", "/v1/workspace/storage", nil, h, nil)
	if err != nil {
		return ov, "", false, err
	}
	if a.Status == http.StatusNotModified {
		return ov, a.Header.Get("ETag"), true, nil
	}
	if err := json.Unmarshal(a.Body, &ov); err != nil {
		return ov, "", false, fmt.Errorf("GET /v1/workspace/storage: the answer is not the JSON expected: %w", err)
	}
	return ov, a.Header.Get("ETag"), false, nil
}

// Listing is a directory of a tree, as GET …/files/{dir} answers it.
type Listing = apiv1.Listing

// filePath is the URL path of p in a tree: p as one segment, its slashes
// %2F, as openapi.json describes the parameter ("" is the tree's top).
func filePath(name, p string) string {
	return projectPath(name, "files") + "/" + url.PathEscape(strings.Trim(p, "/"))
}

func areaQuery(area string) url.Values {
	if area == "" {
		return url.Values{}
	}
	return url.Values{"area": {area}}
}

// ListFiles lists a directory of a project's tree ("" area: workspace;
// "" dir: the tree's top), every page of it: the server answers a big
// directory a page at a time, and ListFiles follows next_cursor.
func (c *Client) ListFiles(ctx context.Context, name, area, dir string) (Listing, error) {
	var all Listing
	for cursor := ""; ; {
		q := areaQuery(area)
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		var l Listing
		if err := c.Do(ctx, "GET", filePath(name, dir), q, nil, &l); err != nil {
			return all, err
		}
		if cursor == "" {
			all = l
		} else {
			all.Entries = append(all.Entries, l.Entries...)
		}
		if l.NextCursor == "" || l.NextCursor == cursor {
			all.NextCursor = ""
			return all, nil
		}
		cursor = l.NextCursor
	}
}

// GetFile is a file's content as the server answered it: 200, 206 for a
// Range given in header, or 304 for an If-None-Match that still holds.
func (c *Client) GetFile(ctx context.Context, name, area, p string, header http.Header) (Answer, error) {
	return c.Raw(ctx, "GET", filePath(name, p), areaQuery(area), header, nil)
}

// DeleteFile deletes a file, or a directory with recursive; journalled.
func (c *Client) DeleteFile(ctx context.Context, name, area, p string, recursive bool) (apiv1.FileRemoveResult, error) {
	q := areaQuery(area)
	if recursive {
		q.Set("recursive", "1")
	}
	var res apiv1.FileRemoveResult
	err := c.Do(ctx, "DELETE", filePath(name, p), q, nil, &res)
	return res, err
}

// SweepNow sweeps a project's areas (none: all) by policy now, without a
// reviewed plan.
func (c *Client) SweepNow(ctx context.Context, name string, areas ...string) (SweepResult, error) {
	now := false
	var r SweepResult
	err := c.Do(ctx, "POST", projectPath(name, "sweep"), nil, apiv1.SweepRequest{DryRun: &now, Areas: areas}, &r)
	return r, err
}

// DiffOptions choose the tree and span of Diff; zero values are the
// server's defaults (the workspace, 24h, 10 paths a list).
type DiffOptions struct {
	Area  string
	Since time.Duration
	Top   int
}

// Diff reads what changed in one of a project's trees between its newest
// stored snapshot and the one kept from o.Since before it.
func (c *Client) Diff(ctx context.Context, name string, o DiffOptions) (apiv1.TreeDiff, error) {
	q := url.Values{}
	if o.Area != "" {
		q.Set("area", o.Area)
	}
	if o.Since > 0 {
		q.Set("since", o.Since.String())
	}
	if o.Top > 0 {
		q.Set("top", strconv.Itoa(o.Top))
	}
	var d apiv1.TreeDiff
	err := c.Do(ctx, "GET", projectPath(name, "diff"), q, nil, &d)
	return d, err
}
