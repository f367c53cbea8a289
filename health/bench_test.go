package health

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// benchChecker is a Checker on the machine's own /proc, a sandbox root in
// a temporary directory and the machine's Docker engine; quota and store
// are stubs, since their probes belong to the caller (the CLI opens XFS and
// the database; those are timed by their own packages).
func benchChecker(b *testing.B, ttl time.Duration) *Checker {
	cli := realDocker(b)
	// One image, so that the daemon has layers to size.
	buildScratchImage(b, cli, fmt.Sprintf("xfsq-health-bench:%d", time.Now().UnixNano()))
	d, err := NewDocker(DockerOptions{CacheTTL: ttl})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { d.Close() })
	ch, err := New(Options{Root: makeRoot(b), Docker: d, Budget: 10 * time.Second,
		Quota: func(context.Context) (QuotaState, error) {
			return QuotaState{Kind: "fallback", Reason: "ext4: no project quota"}, nil
		},
		Store: func(context.Context) error { return nil }})
	if err != nil {
		b.Fatal(err)
	}
	// The first answer samples CPU over its interval and fills the cache.
	if r := ch.Collect(context.Background()); r.Docker.Status != OK {
		b.Fatalf("docker part: %+v", *r.Docker)
	}
	return ch
}

// The answer as a long-lived server gives it: Docker disk usage from the
// cache, container counts asked for every time. Goal: ≤ 5 ms.
func BenchmarkHealthDockerCached(b *testing.B) {
	ch := benchChecker(b, time.Hour)
	for b.Loop() {
		if r := ch.Collect(context.Background()); r.Docker.Status != OK {
			b.Fatal(r.Docker.Error)
		}
	}
}

// Every answer asks the daemon for its disk usage (docker system df).
func BenchmarkHealthDockerUncached(b *testing.B) {
	ch := benchChecker(b, time.Nanosecond)
	for b.Loop() {
		if r := ch.Collect(context.Background()); r.Docker.Status != OK {
			b.Fatal(r.Docker.Error)
		}
	}
}
