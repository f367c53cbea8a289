package project

import (
	"context"

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
			return nil, err
		}
		out = append(out, val)
	}
	return out, nil
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
		return settings.Value{}, "", &InputError{Msg: err.Error()}
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
	err = m.Store.InTx(ctx, func(tx *store.Tx) error {
		if _, err := tx.SetSetting(ctx, key, norm); err != nil {
			return err
		}
		return tx.AppendEvent(ctx, store.EventSettingChanged, "", m.actor(ctx),
			map[string]string{"key": key, "old": prev.Value, "old_source": prev.Source, "new": norm})
	})
	if err != nil {
		return settings.Value{}, "", err
	}
	v, err := m.setting(ctx, key)
	return v, prev.Value + " from " + prev.Source, err
}

// Unresolved reports whether any finding could be fixed but is not.
func Unresolved(findings []Finding) bool {
	for _, f := range findings {
		if f.fixFn != nil && !f.Fixed {
			return true
		}
	}
	return false
}
