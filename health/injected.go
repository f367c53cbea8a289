package health

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// QuotaState is the quota backend in force, as the caller found it now.
type QuotaState struct {
	// Kind is "xfs", "ext4" (the kernel enforces) or "fallback".
	Kind string
	// Reason says why the fallback is in force (or is empty).
	Reason string
	// Fix says how to get kernel enforcement, when the fallback is in force
	// on a filesystem that could have it.
	Fix string
	// OnXFS is whether the root is on XFS (or on ext4 that keeps project
	// quotas): the fallback there means a mount or kernel problem, not a
	// choice of filesystem.
	OnXFS bool
	// Accounting and Enforcement are the kernel's project quota flags
	// (Q_XGETQSTATV) on XFS; nil when not known.
	Accounting, Enforcement *bool
}

// QuotaFunc probes the quota backend. The caller supplies it so that
// health does not depend on quota/xfs.
type QuotaFunc func(ctx context.Context) (QuotaState, error)

func quotaCollector(q QuotaFunc) func(context.Context) (*QuotaPart, error) {
	return func(ctx context.Context) (*QuotaPart, error) {
		s, err := q(ctx)
		if err != nil {
			return nil, fmt.Errorf("quota: %w", err)
		}
		p := &QuotaPart{Part: Part{Status: OK}, Accounting: s.Accounting, Enforcement: s.Enforcement,
			Backend: Backend{Kind: s.Kind, Reason: s.Reason,
				Enforced: s.Kind != "fallback" && (s.Enforcement == nil || *s.Enforcement)}}
		off := func(b *bool) bool { return b != nil && !*b }
		switch {
		case s.Kind != "fallback" && (off(s.Accounting) || off(s.Enforcement)):
			// The limits xfsq set are not being enforced right now.
			judge(&p.Part, Critical, s.Kind+" project quota accounting or enforcement is off")
			p.Fix = s.Fix
		case s.Kind == "fallback" && s.OnXFS:
			judge(&p.Part, Warn, "the root's filesystem keeps project quotas but they cannot be used: "+s.Reason)
			p.Fix = s.Fix
		}
		return p, nil
	}
}

// StoreFunc runs a trivial query on the store.
type StoreFunc func(ctx context.Context) error

func storeCollector(s StoreFunc) func(context.Context) (*StorePart, error) {
	return func(ctx context.Context) (*StorePart, error) {
		start := time.Now()
		if err := s(ctx); err != nil {
			var fe *FixError
			if !errors.As(err, &fe) {
				err = withFix(err, timeoutFix["store"])
			}
			return &StorePart{LatencySeconds: time.Since(start).Seconds()}, fmt.Errorf("store: %w", err)
		}
		return &StorePart{Part: Part{Status: OK}, Reachable: true, LatencySeconds: time.Since(start).Seconds()}, nil
	}
}
