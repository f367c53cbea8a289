// Package settingwrites owns the change of a setting beside the core:
// set (validated, a zero that switches a safety rail off only when asked
// by name) and reset (the environment or the default applies again), each
// journalled settings.changed with the old and new values; a setting the
// kernel or the inbound tree holds is given to it first, so that what it
// refuses is not recorded.
//
// It works over a narrow surface of the core (Core, and the store the core
// opened): it reads settings through the core, gives the kernel the grace
// and the inbound tree its limit through it, writes only the settings and
// their journal records, and never imports a shell or another use case.
// The facade (package sandbox) is its only caller.
package settingwrites

import (
	"context"

	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/quota/xfs"
	"github.com/xfsq/xfsq/sandbox/internal/core"
	"github.com/xfsq/xfsq/settings"
	"github.com/xfsq/xfsq/store"
	"github.com/xfsq/xfsq/units"
)

// Core is what a setting's change asks of the core: a setting's effective
// value, who acts, the kernel's quota interface (nil on the fallback) for
// soft_grace, and the inbound tree's limit for default_inbound_quota.
type Core interface {
	Setting(ctx context.Context, key string) (settings.Value, error)
	ActorOf(ctx context.Context) string
	Kernel() *xfs.FS
	ApplyInboundQuota(ctx context.Context, bytesHard uint64) error
}

// Writes changes the settings of the root a core manages.
type Writes struct {
	Core
	// Store is the core's store.
	Store *store.Store
}

// New is the settings' writes of the root c manages.
func New(c *core.Manager) *Writes { return &Writes{Core: c, Store: c.Store} }

// ResetSetting forgets a stored setting, so that the environment or the
// default applies again, and journals settings.changed with both; a
// setting not stored is left as it is, and nothing is journalled.
func (w *Writes) ResetSetting(ctx context.Context, key string) (v settings.Value, old string, err error) {
	if _, err := settings.Lookup(key); err != nil {
		return settings.Value{}, "", &core.InputError{Msg: err.Error()}
	}
	prev, err := w.Setting(ctx, key)
	if err != nil {
		return settings.Value{}, "", err
	}
	err = w.Store.InTx(ctx, func(tx *store.Tx) error {
		ok, err := tx.ResetSetting(ctx, key)
		if err != nil || !ok {
			return err
		}
		// What applies once the stored value is gone; read here, not
		// through the store, which still holds it until the commit.
		s, _ := settings.Lookup(key)
		next, rerr := settings.Resolve(s, "", false)
		if rerr != nil { // the reset goes ahead; what follows says why nothing applies
			next.Source = rerr.Error()
		}
		return tx.AppendEvent(ctx, "", w.ActorOf(ctx), journal.SettingChanged{
			Key: key, Old: prev.Value, OldSource: prev.Source, New: next.Value, NewSource: next.Source, Reset: true})
	})
	if err != nil {
		return settings.Value{}, "", err
	}
	v, err = w.Setting(ctx, key)
	if err == nil && key == "default_inbound_quota" {
		err = w.ApplyInboundQuota(ctx, v.Bytes())
	}
	return v, prev.Value + " from " + prev.Source, err
}

// SetSetting validates and stores a setting, journalling old and new. A
// zero that switches a safety rail off is refused (see SetSettingExplicit).
func (w *Writes) SetSetting(ctx context.Context, key, value string) (settings.Value, string, error) {
	return w.SetSettingExplicit(ctx, key, value, false)
}

// SetSettingExplicit is SetSetting; allowZero stores a zero that switches a
// safety rail off (busy_grace 0s …), which the operator asked for by name.
func (w *Writes) SetSettingExplicit(ctx context.Context, key, value string, allowZero bool) (settings.Value, string, error) {
	s, err := settings.Lookup(key)
	if err != nil {
		return settings.Value{}, "", &core.InputError{Msg: err.Error()}
	}
	norm, err := s.NormalizeExplicit(value, allowZero)
	if err != nil {
		return settings.Value{}, "", errkind.WithFix(errkind.Input, &core.InputError{Msg: err.Error()}, errkind.FixOf(err))
	}
	prev, err := w.Setting(ctx, key)
	if err != nil {
		return settings.Value{}, "", err
	}
	if kernel := w.Kernel(); key == "soft_grace" && kernel != nil {
		// The kernel first: a grace it refuses is not recorded. Should the
		// store fail after it, doctor sees the kernel differ and --fix
		// restores what is recorded.
		d, _ := units.ParseDuration(norm)
		if err := kernel.SetGrace(d, d); err != nil {
			return settings.Value{}, "", err
		}
	}
	if key == "default_inbound_quota" {
		// The tree first, as project set changes it: a limit it refuses
		// (below the tree's soft limit) is not recorded.
		b, _ := units.ParseSize(norm)
		if err := w.ApplyInboundQuota(ctx, b); err != nil {
			return settings.Value{}, "", err
		}
	}
	err = w.Store.InTx(ctx, func(tx *store.Tx) error {
		if _, err := tx.SetSetting(ctx, key, norm); err != nil {
			return err
		}
		return tx.AppendEvent(ctx, "", w.ActorOf(ctx), journal.SettingChanged{Key: key, Old: prev.Value, OldSource: prev.Source, New: norm})
	})
	if err != nil {
		return settings.Value{}, "", err
	}
	v, err := w.Setting(ctx, key)
	return v, prev.Value + " from " + prev.Source, err
}
