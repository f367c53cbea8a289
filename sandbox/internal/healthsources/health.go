// Package healthsources is what xfsq health (and serve's health answer)
// reads of a root besides the host: the store's part with the health_*
// thresholds it keeps, and the quota backend's part, asked of the kernel
// now. It opens the store on its own, within a budget, and never creates
// one; it never fails as a whole (what cannot be read is the store part's
// error), and never writes.
//
// It also says whether an open root can serve now (Ready, a server's
// readiness: the root mounted, its filesystem still the backend's, the
// store answering within a budget), from what the facade hands it of the
// root (Readiness).
//
// It stands on the core only for how a root and its store are named and
// checked (core.CheckRoot, core.CheckStoreExists, core.StoreDSN,
// core.HostOf); it never imports a shell or another use case. The facade
// (package sandbox) is its only caller.
package healthsources

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/health"
	"github.com/xfsq/xfsq/quota"
	"github.com/xfsq/xfsq/quota/xfs"
	"github.com/xfsq/xfsq/sandbox/internal/core"
	"github.com/xfsq/xfsq/settings"
	"github.com/xfsq/xfsq/store"
)

// HealthSources is what xfsq health reads of a root besides the host: the
// store's part and thresholds, and the quota backend's part.
type HealthSources struct {
	Root       string
	Thresholds health.Thresholds
	// DockerCacheTTL is the setting health_docker_cache_ttl.
	DockerCacheTTL time.Duration
	Quota          health.QuotaFunc
	Store          health.StoreFunc

	close func() error
}

// Close closes the store, if it was opened.
func (h *HealthSources) Close() error {
	if h.close != nil {
		return h.close()
	}
	return nil
}

// OpenHealth opens the store of cfg's root for health's questions. It never
// fails as a whole: a root not initialised, a store that does not answer
// within budget, or unreadable settings are the store part's error, and the
// defaults judge the rest. It never creates a store.
func OpenHealth(ctx context.Context, cfg core.Config, budget time.Duration) (*HealthSources, error) {
	root, err := filepath.Abs(cfg.Root)
	if err != nil {
		return nil, err
	}
	h := &HealthSources{Root: root, Thresholds: health.DefaultThresholds(), DockerCacheTTL: 60 * time.Second, Quota: quotaProbe(root)}
	fail := func(err error) {
		if hint := errkind.HintOf(err); hint != "" {
			err = &health.FixError{Err: err, Fix: hint}
		}
		h.Store = func(context.Context) error { return err }
	}
	if err := core.CheckRoot(root); err != nil {
		fail(err)
		return h, nil
	}
	if err := core.CheckStoreExists(cfg.DSN); err != nil {
		fail(err)
		return h, nil
	}
	// Opening is bounded too: a PostgreSQL that does not answer must
	// not hold the whole answer past its budget.
	openCtx, cancel := context.WithTimeout(ctx, budget)
	st, err := store.Open(openCtx, core.StoreDSN(cfg, root), core.HostOf(cfg))
	cancel()
	if err != nil {
		fail(err)
		return h, nil
	}
	h.close = st.Close
	h.Store = st.Ping
	if th, ttl, err := healthSettings(ctx, st); err != nil {
		// The defaults still judge the rest; the store part says why.
		h.Store = func(context.Context) error { return fmt.Errorf("reading the health_* settings: %w", err) }
	} else {
		h.Thresholds, h.DockerCacheTTL = th, ttl
	}
	return h, nil
}

// healthSettings reads the thresholds and the docker cache TTL.
func healthSettings(ctx context.Context, st *store.Store) (health.Thresholds, time.Duration, error) {
	var th health.Thresholds
	var ttl time.Duration
	for _, f := range []struct {
		key string
		dst *float64
	}{
		{"health_disk_free_warn_percent", &th.DiskFreeWarnPercent}, {"health_disk_free_critical_percent", &th.DiskFreeCriticalPercent},
		{"health_memory_available_warn_percent", &th.MemoryAvailableWarnPercent},
		{"health_memory_available_critical_percent", &th.MemoryAvailableCriticalPercent},
		{"health_load_per_core_warn", &th.LoadPerCoreWarn}, {"health_load_per_core_critical", &th.LoadPerCoreCritical},
		{"health_docker_cache_ttl", nil},
	} {
		s, err := settings.Lookup(f.key)
		if err != nil {
			return th, 0, err
		}
		stored, ok, err := st.Setting(ctx, f.key)
		if err != nil {
			return th, 0, err
		}
		v, err := settings.Resolve(s, stored, ok)
		if err != nil {
			return th, 0, err
		}
		if f.dst != nil {
			*f.dst = v.Float()
		} else {
			ttl = v.Duration()
		}
	}
	return th, ttl, nil
}

// quotaProbe asks the kernel now, as xfs.Open does at every start: the
// root's filesystem and its project quota state (Q_XGETQSTATV).
func quotaProbe(root string) health.QuotaFunc {
	return func(context.Context) (health.QuotaState, error) {
		var sfs unix.Statfs_t
		if err := unix.Statfs(root, &sfs); err != nil {
			return health.QuotaState{}, &health.FixError{Err: fmt.Errorf("statfs %s: %w", root, err),
				Fix: "check that the sandbox root exists and is mounted"}
		}
		onXFS := sfs.Type == unix.XFS_SUPER_MAGIC
		fs, err := xfs.Open(root)
		if err == nil {
			fs.Close()
			on := true
			return health.QuotaState{Kind: fs.Name(), OnXFS: onXFS, Accounting: &on, Enforcement: &on}, nil
		}
		var un *quota.UnsupportedError
		if !errors.As(err, &un) {
			return health.QuotaState{}, err
		}
		s := health.QuotaState{Kind: "fallback", Reason: un.Short, Fix: un.Fix, OnXFS: onXFS}
		if strings.HasPrefix(un.Short, "ext4: project quota not enforced") {
			// ext4 made for project quotas, mounted without prjquota:
			// a mount problem, as on XFS, not a choice of filesystem.
			on, off := true, false
			s.OnXFS, s.Reason, s.Accounting, s.Enforcement = true, un.Reason, &on, &off
			return s, nil
		}
		if onXFS {
			s.Reason = un.Reason
			// xfs.Open names what it found in Short; these two are the
			// mount's quota flags, the other cases leave them unknown.
			on, off := true, false
			switch {
			case strings.Contains(un.Short, "not enforced"):
				s.Accounting, s.Enforcement = &on, &off
			case strings.Contains(un.Short, "without prjquota"):
				s.Accounting, s.Enforcement = &off, &off
			}
		}
		return s, nil
	}
}
