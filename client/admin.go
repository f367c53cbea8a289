package client

import (
	"context"
	"net/url"
	"strconv"
	"strings"

	apiv1 "github.com/xfsq/xfsq/api/v1"
)

// ReportOptions say which trees Report shows, as report's flags do; the
// zero value is every tree by project.
type ReportOptions struct {
	Projects, Areas []string
	// Over keeps only trees at or over this percent of their hard byte
	// limit (0: every tree).
	Over float64
	// Sort is apiv1.SortByProject (""), SortByUsed, SortByPercent or SortByGrowth.
	Sort string
	// Check sets the answer's CheckFailed when a tree shown is at a hard limit.
	Check bool
	// Refresh walks each fallback tree first.
	Refresh bool
}

// Report is xfsq report over HTTP: usage and limits of the trees asked
// for, the backend once, and the warnings a reader should see.
func (c *Client) Report(ctx context.Context, o ReportOptions) (apiv1.Report, error) {
	q := url.Values{}
	if len(o.Projects) > 0 {
		q.Set("project", strings.Join(o.Projects, ","))
	}
	if len(o.Areas) > 0 {
		q.Set("area", strings.Join(o.Areas, ","))
	}
	if o.Over > 0 {
		q.Set("over", strconv.FormatFloat(o.Over, 'g', -1, 64))
	}
	if o.Sort != "" {
		q.Set("sort", o.Sort)
	}
	for k, v := range map[string]bool{"check": o.Check, "refresh": o.Refresh} {
		if v {
			q.Set(k, "1")
		}
	}
	var r apiv1.Report
	err := c.Do(ctx, "GET", "/v1/workspace/storage/report", q, nil, &r)
	return r, err
}

// Settings lists every setting with its value and source, as settings list.
func (c *Client) Settings(ctx context.Context) ([]apiv1.Setting, error) {
	var vs []apiv1.Setting
	err := c.Do(ctx, "GET", "/v1/settings", nil, nil, &vs)
	return vs, err
}

// Setting is one setting, as settings get.
func (c *Client) Setting(ctx context.Context, key string) (apiv1.Setting, error) {
	var v apiv1.Setting
	err := c.Do(ctx, "GET", "/v1/settings/"+url.PathEscape(key), nil, nil, &v)
	return v, err
}

// SetSetting changes a setting (operator), as settings set; allowZero
// stores a zero that switches a safety rail off.
func (c *Client) SetSetting(ctx context.Context, key, value string, allowZero bool) (apiv1.SettingChange, error) {
	var ch apiv1.SettingChange
	err := c.Do(ctx, "PUT", "/v1/settings/"+url.PathEscape(key), nil, apiv1.SetSettingRequest{Value: value, AllowZero: allowZero}, &ch)
	return ch, err
}

// ResetSetting forgets a stored setting (operator), as settings reset.
func (c *Client) ResetSetting(ctx context.Context, key string) (apiv1.SettingChange, error) {
	var ch apiv1.SettingChange
	err := c.Do(ctx, "DELETE", "/v1/settings/"+url.PathEscape(key), nil, nil, &ch)
	return ch, err
}

// Doctor is the drift doctor finds (operator), repairing nothing.
func (c *Client) Doctor(ctx context.Context) (apiv1.Doctor, error) {
	var d apiv1.Doctor
	err := c.Do(ctx, "GET", "/v1/system/doctor", nil, nil, &d)
	return d, err
}

// FixDoctor repairs what doctor can (operator), as doctor --fix, each
// repair journalled.
func (c *Client) FixDoctor(ctx context.Context) (apiv1.Doctor, error) {
	var d apiv1.Doctor
	err := c.Do(ctx, "POST", "/v1/system/doctor/fix", nil, nil, &d)
	return d, err
}
