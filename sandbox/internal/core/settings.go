package core

import (
	"context"
	"errors"
	"strings"

	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/settings"
	"github.com/xfsq/xfsq/store"
	"github.com/xfsq/xfsq/units"
)

// Settings lists every setting's effective value.
func (m *Manager) Settings(ctx context.Context) ([]settings.Value, error) {
	stored, err := m.Store.Settings(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]settings.Value, 0, len(settings.All))
	for _, s := range settings.All {
		v, isStored := stored[s.Key]
		val, err := settings.Resolve(s, v, isStored)
		if err != nil {
			// One bad environment value must not hide every other
			// setting: the listing shows it where the value would be.
			val = settings.Value{Setting: s, Source: "env " + s.Env, Problem: err.Error()}
		}
		out = append(out, val)
	}
	return out, nil
}

// SettingProblems is the problems of a listing, as one error of kind
// input (a bad environment value is bad input); nil when there are none.
func SettingProblems(vals []settings.Value) error {
	var msgs []string
	for _, v := range vals {
		if v.Problem != "" {
			msgs = append(msgs, v.Problem)
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	return errkind.New(errkind.Input, errors.New(strings.Join(msgs, "; ")))
}

// ResetSetting forgets a stored setting, so that the environment or the
// default applies again, and journals settings.changed with both; a
// setting not stored is left as it is, and nothing is journalled.
func (m *Manager) ResetSetting(ctx context.Context, key string) (v settings.Value, old string, err error) {
	if _, err := settings.Lookup(key); err != nil {
		return settings.Value{}, "", &InputError{Msg: err.Error()}
	}
	prev, err := m.setting(ctx, key)
	if err != nil {
		return settings.Value{}, "", err
	}
	err = m.Store.InTx(ctx, func(tx *store.Tx) error {
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
		return tx.AppendEvent(ctx, "", m.actor(ctx), journal.SettingChanged{
			Key: key, Old: prev.Value, OldSource: prev.Source, New: next.Value, NewSource: next.Source, Reset: true})
	})
	if err != nil {
		return settings.Value{}, "", err
	}
	v, err = m.setting(ctx, key)
	if err == nil && key == "default_inbound_quota" {
		err = m.applyInboundQuota(ctx, v.Bytes())
	}
	return v, prev.Value + " from " + prev.Source, err
}

// Setting reads one setting's effective value.
func (m *Manager) Setting(ctx context.Context, key string) (settings.Value, error) {
	if _, err := settings.Lookup(key); err != nil {
		return settings.Value{}, &InputError{Msg: err.Error()}
	}
	return m.setting(ctx, key)
}

// SetSetting validates and stores a setting, journalling old and new. A
// zero that switches a safety rail off is refused (see SetSettingExplicit).
func (m *Manager) SetSetting(ctx context.Context, key, value string) (settings.Value, string, error) {
	return m.SetSettingExplicit(ctx, key, value, false)
}

// SetSettingExplicit is SetSetting; allowZero stores a zero that switches a
// safety rail off (busy_grace 0s …), which the operator asked for by name.
func (m *Manager) SetSettingExplicit(ctx context.Context, key, value string, allowZero bool) (settings.Value, string, error) {
	s, err := settings.Lookup(key)
	if err != nil {
		return settings.Value{}, "", &InputError{Msg: err.Error()}
	}
	norm, err := s.NormalizeExplicit(value, allowZero)
	if err != nil {
		return settings.Value{}, "", errkind.WithFix(errkind.Input, &InputError{Msg: err.Error()}, errkind.FixOf(err))
	}
	prev, err := m.setting(ctx, key)
	if err != nil {
		return settings.Value{}, "", err
	}
	if key == "soft_grace" && m.xfs != nil {
		// The kernel first: a grace it refuses is not recorded. Should the
		// store fail after it, doctor sees the kernel differ and --fix
		// restores what is recorded.
		d, _ := units.ParseDuration(norm)
		if err := m.xfs.SetGrace(d, d); err != nil {
			return settings.Value{}, "", err
		}
	}
	if key == "default_inbound_quota" {
		// The tree first, as project set changes it: a limit it refuses
		// (below the tree's soft limit) is not recorded.
		b, _ := units.ParseSize(norm)
		if err := m.applyInboundQuota(ctx, b); err != nil {
			return settings.Value{}, "", err
		}
	}
	err = m.Store.InTx(ctx, func(tx *store.Tx) error {
		if _, err := tx.SetSetting(ctx, key, norm); err != nil {
			return err
		}
		return tx.AppendEvent(ctx, "", m.actor(ctx), journal.SettingChanged{Key: key, Old: prev.Value, OldSource: prev.Source, New: norm})
	})
	if err != nil {
		return settings.Value{}, "", err
	}
	v, err := m.setting(ctx, key)
	return v, prev.Value + " from " + prev.Source, err
}
