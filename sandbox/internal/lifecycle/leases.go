package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"time"

	apiv1 "github.com/xfsq/xfsq/api/v1"
	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/sandbox/internal/core"
	"github.com/xfsq/xfsq/store"
	"github.com/xfsq/xfsq/units"
)

// RunRule says what a run name may be: it names scratch/PROJECT/RUN.
const RunRule = "1-128 characters of A-Z, a-z, 0-9, '.', '_' and '-', starting with a letter or digit"

// Compiled on first use: the bounded repetition makes a large program,
// ~0.3 ms that every other command would pay at start-up.
var runPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`) })

// MaxLeaseTTL bounds a lease: a forgotten lease must not shield a project for ever.
const MaxLeaseTTL = 7 * 24 * time.Hour

// LeaseStatus is a lease and whether it still holds (KeptLonger: a
// renewal asked for less than the lease already had, and the lease kept
// its later expiry; release it first to shorten it). The wire's type
// (api/v1).
type LeaseStatus = apiv1.Lease

// leaseStatus is the store's lease l, active or not.
func leaseStatus(l store.Lease, active bool) LeaseStatus {
	return LeaseStatus{Project: l.Project, Run: l.Run, ExpiresAt: l.ExpiresAt, Active: active}
}

// AcquireLease takes or renews a run's lease on a project for ttl: while it
// holds, sweeps skip the project. A renewal never shortens a lease.
func (l *Lifecycle) AcquireLease(ctx context.Context, name, run string, ttl time.Duration) (LeaseStatus, error) {
	if err := l.checkLease(ctx, name, run); err != nil {
		return LeaseStatus{}, err
	}
	if ttl <= 0 || ttl > MaxLeaseTTL {
		return LeaseStatus{}, &core.InputError{Param: "ttl", Msg: "ttl " + fmt.Sprintf("%s: use more than 0 and at most %s", units.FormatDuration(ttl), units.FormatDuration(MaxLeaseTTL))}
	}
	asked := l.Now().Add(ttl).UTC()
	lease := store.Lease{Project: name, Run: run, ExpiresAt: asked}
	err := l.Store.InTx(ctx, func(tx *store.Tx) error {
		var err error
		if lease.ExpiresAt, err = tx.AcquireLease(ctx, name, run, asked); err != nil {
			return err
		}
		// Under the lease lock AcquireLease took: a removal that began
		// since checkLease looked has marked the project, and wins.
		state, err := tx.ProjectState(ctx, name)
		if errors.Is(err, store.ErrNotFound) {
			return core.NotFound(name)
		}
		if err == nil && state != store.StateReady {
			err = core.ProjectNotReady(name, state)
		}
		return err
	})
	if err != nil {
		return LeaseStatus{}, err
	}
	lease.ExpiresAt = lease.ExpiresAt.UTC()
	st := leaseStatus(lease, true)
	st.KeptLonger = lease.ExpiresAt.After(asked)
	return st, nil
}

// ReleaseLease drops a run's lease; releasing one that is not held is an error.
func (l *Lifecycle) ReleaseLease(ctx context.Context, name, run string) error {
	if err := core.ValidateName(name); err != nil {
		return err
	}
	if !runPattern().MatchString(run) {
		return &core.InputError{Msg: fmt.Sprintf("run name %q is invalid: use %s", run, RunRule)}
	}
	var had bool
	err := l.Store.InTx(ctx, func(tx *store.Tx) error {
		var err error
		had, err = tx.ReleaseLease(ctx, name, run)
		return err
	})
	if err == nil && !had {
		err = errkind.WithFix(errkind.NotFound, fmt.Errorf("project %q has no lease for run %q", name, run), errkind.Fix("see %s", errkind.Do(errkind.OpLeaseList, name)))
	}
	return err
}

// Leases lists every lease with whether it still holds.
func (l *Lifecycle) Leases(ctx context.Context) ([]LeaseStatus, error) {
	all, err := l.Store.Leases(ctx)
	if err != nil {
		return nil, err
	}
	now := l.Now()
	out := make([]LeaseStatus, len(all))
	for i, ls := range all {
		out[i] = leaseStatus(ls, ls.ExpiresAt.After(now))
	}
	return out, nil
}

// ProjectLeases lists one project's leases, held or lapsed; a project
// that does not exist is an error (errkind.NotFound), not an empty list.
func (l *Lifecycle) ProjectLeases(ctx context.Context, name string) ([]LeaseStatus, error) {
	if err := core.ValidateName(name); err != nil {
		return nil, err
	}
	if _, err := l.Store.Project(ctx, name); errors.Is(err, store.ErrNotFound) {
		return nil, core.NotFound(name)
	} else if err != nil {
		return nil, err
	}
	all, err := l.Leases(ctx)
	if err != nil {
		return nil, err
	}
	out := []LeaseStatus{}
	for _, ls := range all {
		if ls.Project == name {
			out = append(out, ls)
		}
	}
	return out, nil
}

func (l *Lifecycle) checkLease(ctx context.Context, name, run string) error {
	if err := core.ValidateName(name); err != nil {
		return err
	}
	if !runPattern().MatchString(run) {
		return &core.InputError{Msg: fmt.Sprintf("run name %q is invalid: use %s", run, RunRule)}
	}
	p, err := l.Store.Project(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return core.NotFound(name)
	}
	if err != nil {
		return err
	}
	if p.State != store.StateReady {
		return core.ProjectNotReady(name, p.State)
	}
	return nil
}
