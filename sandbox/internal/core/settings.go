package core

import (
	"context"
	"errors"
	"strings"

	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/settings"
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

// Setting reads one setting's effective value.
func (m *Manager) Setting(ctx context.Context, key string) (settings.Value, error) {
	if _, err := settings.Lookup(key); err != nil {
		return settings.Value{}, &InputError{Msg: err.Error()}
	}
	return m.setting(ctx, key)
}
