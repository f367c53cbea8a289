package client

import (
	"context"
	"net/url"
	"strconv"
	"time"

	apiv1 "github.com/xfsq/xfsq/api/v1"
)

// HistoryOptions choose the window and how many points a series holds at
// most; zero values are the server's defaults (the whole snapshot window,
// 720 points).
type HistoryOptions struct {
	Since  time.Duration
	Points int
}

func (o HistoryOptions) query() url.Values {
	q := url.Values{}
	if o.Since > 0 {
		q.Set("since", o.Since.String())
	}
	if o.Points > 0 {
		q.Set("points", strconv.Itoa(o.Points))
	}
	return q
}

// ProjectHistory reads each of a project's trees' stored snapshot totals
// over the window, with its limits now.
func (c *Client) ProjectHistory(ctx context.Context, name string, o HistoryOptions) (apiv1.ProjectHistory, error) {
	var h apiv1.ProjectHistory
	err := c.Do(ctx, "GET", projectPath(name, "history"), o.query(), nil, &h)
	return h, err
}

// DiskHistory reads the root's disk use at each scheduled snapshot pass
// over the window.
func (c *Client) DiskHistory(ctx context.Context, o HistoryOptions) (apiv1.DiskHistory, error) {
	var h apiv1.DiskHistory
	err := c.Do(ctx, "GET", "/v1/workspace/storage/history", o.query(), nil, &h)
	return h, err
}
