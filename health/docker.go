package health

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// DockerOptions configure NewDocker.
type DockerOptions struct {
	// Host is the daemon's address; default DOCKER_HOST, else
	// unix:///var/run/docker.sock.
	Host string
	// CacheTTL is how long a disk-usage answer is reused (default 60s; the
	// setting health_docker_cache_ttl).
	CacheTTL time.Duration
	// DiskUsageTimeout bounds the one disk-usage call in flight (default
	// 2m). It is longer than any answer's budget on purpose: an answer that
	// runs out of budget leaves the call running, and its result serves
	// the next answers from the cache.
	DiskUsageTimeout time.Duration
}

// Docker collects from the Docker Engine through its Go SDK. It is safe for
// concurrent use; keep one per process so that its cache is shared.
type Docker struct {
	cli       *client.Client
	host      string
	ttl       time.Duration
	duTimeout time.Duration

	mu       sync.Mutex
	cached   *diskUsage // nil until the first success
	inflight *duCall    // the one DiskUsage call running, if any
}

type diskUsage struct {
	r  client.DiskUsageResult
	at time.Time
}

// duCall is one DiskUsage call that every waiting answer shares.
type duCall struct {
	done chan struct{}
	du   diskUsage
	err  error
}

// NewDocker makes the docker collector. It does not contact the daemon.
func NewDocker(o DockerOptions) (*Docker, error) {
	opts := []client.Opt{client.FromEnv}
	if o.Host != "" {
		opts = append(opts, client.WithHost(o.Host))
	}
	cli, err := client.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("docker: %w", err)
	}
	d := &Docker{cli: cli, host: cli.DaemonHost(), ttl: o.CacheTTL, duTimeout: o.DiskUsageTimeout}
	if d.ttl <= 0 {
		d.ttl = 60 * time.Second
	}
	if d.duTimeout <= 0 {
		d.duTimeout = 2 * time.Minute
	}
	return d, nil
}

// Close releases the client's connections.
func (d *Docker) Close() error { return d.cli.Close() }

func (d *Docker) timeoutFix() string {
	return "the Docker daemon at " + d.host + " accepted the connection but did not answer: check it (systemctl status docker, journalctl -u docker)"
}

// reachFix is the fix for a daemon that cannot be reached at all.
func (d *Docker) reachFix() string {
	if os.Getenv("DOCKER_HOST") != "" {
		return "start the Docker daemon, or correct DOCKER_HOST (" + os.Getenv("DOCKER_HOST") + ")"
	}
	return "start the Docker daemon (systemctl start docker) or set DOCKER_HOST"
}

func (d *Docker) fail(op string, err error) error {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return withFix(fmt.Errorf("docker: daemon at %s did not answer %s in time: %w", d.host, op, err), d.timeoutFix())
	case client.IsErrConnectionFailed(err):
		return withFix(fmt.Errorf("docker: daemon not reachable at %s: %w", d.host, err), d.reachFix())
	}
	return withFix(fmt.Errorf("docker: %s at %s: %w", op, d.host, err),
		"check the daemon's log (journalctl -u docker); the client needs Engine API 1.40 or later")
}

// answerMargin is how long before the budget ends the collector stops
// waiting for disk usage, so that it still returns the counts it has
// rather than being cut off with nothing.
const answerMargin = 20 * time.Millisecond

func (d *Docker) collect(ctx context.Context) (*DockerPart, error) {
	p := &DockerPart{Part: Part{Status: OK}, Host: d.host}
	// Start (or join) disk usage first: it is the slow one, and the list
	// runs meanwhile.
	du, call := d.diskUsage()
	list, err := d.cli.ContainerList(ctx, client.ContainerListOptions{All: true})
	if err != nil {
		return p, d.fail("list containers", err)
	}
	for _, c := range list.Items {
		p.ContainersTotal++
		switch c.State {
		case container.StateRunning, container.StatePaused, container.StateRestarting:
			p.ContainersRunning++ // what docker ps lists
		}
	}
	if call != nil {
		wait := ctx
		if dl, ok := ctx.Deadline(); ok {
			var cancel context.CancelFunc
			wait, cancel = context.WithDeadline(ctx, dl.Add(-answerMargin))
			defer cancel()
		}
		select {
		case <-call.done:
			if call.err != nil {
				return p, d.fail("disk usage (docker system df)", call.err)
			}
			du = &call.du
		case <-wait.Done():
			if du == nil {
				return p, withFix(fmt.Errorf("docker: disk usage (docker system df) at %s took longer than the budget; it goes on, and the next answer uses its result", d.host),
					"ask again in a minute; if it never finishes, prune images and build cache (docker system prune)")
			}
			// The expired answer is better than none; DiskUsageAt shows its age.
		}
	}
	p.ImagesBytes, p.Images = du.r.Images.TotalSize, du.r.Images.TotalCount
	p.ContainersBytes = du.r.Containers.TotalSize
	p.BuildCacheBytes, p.VolumesBytes = du.r.BuildCache.TotalSize, du.r.Volumes.TotalSize
	p.DiskUsageAt = du.at.UTC().Truncate(time.Second)
	return p, nil
}

// diskUsage returns the cached answer while it is fresh (call nil);
// otherwise the call to wait for, started now unless one is already
// running, and the stale answer if any. Never two calls at once: the daemon
// would compute the same sizes twice.
func (d *Docker) diskUsage() (*diskUsage, *duCall) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cached != nil && time.Since(d.cached.at) < d.ttl {
		return d.cached, nil
	}
	if d.inflight == nil {
		c := &duCall{done: make(chan struct{})}
		d.inflight = c
		go d.fetch(c)
	}
	return d.cached, d.inflight
}

func (d *Docker) fetch(c *duCall) {
	// Not any answer's context: one answer giving up must not cancel the
	// call the others wait for.
	ctx, cancel := context.WithTimeout(context.Background(), d.duTimeout)
	defer cancel()
	r, err := d.cli.DiskUsage(ctx, client.DiskUsageOptions{Containers: true, Images: true, BuildCache: true, Volumes: true})
	c.du, c.err = diskUsage{r: r, at: time.Now()}, err
	d.mu.Lock()
	if err == nil {
		d.cached = &c.du
	}
	d.inflight = nil
	d.mu.Unlock()
	close(c.done)
}
