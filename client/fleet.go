package client

import (
	"context"
	"net/url"

	apiv1 "github.com/xfsq/xfsq/api/v1"
)

// FleetHosts lists the hosts sharing the server's store: live ones, each
// fresh or stale, and retired ones apart (GET /v1/fleet/hosts).
func (c *Client) FleetHosts(ctx context.Context) (apiv1.FleetHosts, error) {
	var out apiv1.FleetHosts
	err := c.Do(ctx, "GET", "/v1/fleet/hosts", nil, nil, &out)
	return out, err
}

// FleetStorage lists the trees of hosts (every host when none), each with
// its host and the age of its figures (GET /v1/fleet/storage).
func (c *Client) FleetStorage(ctx context.Context, hosts ...string) (apiv1.FleetStorage, error) {
	v := url.Values{}
	for _, h := range hosts {
		v.Add("host", h)
	}
	var out apiv1.FleetStorage
	err := c.Do(ctx, "GET", "/v1/fleet/storage", v, nil, &out)
	return out, err
}

// RetireHost retires a host of the fleet: its pending deletions are
// journalled as abandoned, its history kept. A host still reporting is
// refused (409) unless force.
func (c *Client) RetireHost(ctx context.Context, host string, force bool) (apiv1.HostRetired, error) {
	var out apiv1.HostRetired
	err := c.Do(ctx, "POST", "/v1/fleet/hosts/"+url.PathEscape(host)+"/retire", nil, apiv1.RetireRequest{Force: force}, &out)
	return out, err
}
