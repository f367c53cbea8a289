package settingwrites

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/internal/testsupport/storetest"
	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/sandbox/internal/core"
	"github.com/xfsq/xfsq/settings"
	"github.com/xfsq/xfsq/store"
)

var ctx = context.Background()

// changes are the settings.changed records of w's store, oldest first.
func changes(t *testing.T, w *Writes) []journal.SettingChanged {
	t.Helper()
	evs, err := w.Store.Events(ctx, store.EventFilter{Type: journal.TypeSettingChanged})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]journal.SettingChanged, len(evs))
	for i, e := range evs {
		if err := json.Unmarshal(e.Payload, &out[len(evs)-1-i]); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// forEachStore runs fn with the settings' writes of a fresh fallback root
// on each driver.
func forEachStore(t *testing.T, fn func(t *testing.T, w *Writes)) {
	storetest.ForEach(t, func(t *testing.T, dsn string) {
		st, err := store.Open(ctx, dsn, "host-a")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		m, _, err := core.Init(ctx, core.Options{Root: t.TempDir(), Store: st})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		fn(t, New(m))
	})
}

// A set is validated and normalised before anything is stored; a zero
// that switches a safety rail off is stored only when asked for by name
// (a zero of a setting that is no rail needs no asking); each set is
// journalled with the old value and where it came from, and the new one;
// a refusal stores and journals nothing.
func TestSetSetting(t *testing.T) {
	forEachStore(t, func(t *testing.T, w *Writes) {
		for _, c := range []struct {
			name, key, value string
			allowZero        bool
			want             string // the value stored and journalled; "": refused
			refusal          string // in the refusal
			hint             string // in the refusal's hint
		}{
			{name: "no such setting", key: "nope", value: "1h", refusal: "nope"},
			{name: "not a duration", key: "busy_grace", value: "soon", refusal: "busy_grace"},
			{name: "below its minimum", key: "refresh_window", value: "10ms", refusal: "too short"},
			{name: "a rail's zero unasked", key: "busy_grace", value: "0s", refusal: "switches a safety rail off", hint: settings.AllowZero},
			{name: "a size rail's zero unasked", key: "default_quota", value: "0", refusal: "switches a safety rail off"},
			{name: "normalised", key: "busy_grace", value: " 48h ", want: "2d"},
			{name: "set again", key: "busy_grace", value: "3d", want: "3d"},
			{name: "a rail's zero asked for", key: "busy_grace", value: "0s", allowZero: true, want: "0s"},
			{name: "a zero that is no rail", key: "scratch_ttl", value: "0s", want: "0s"},
			{name: "a size", key: "default_quota", value: "1GiB", want: "1073741824"},
		} {
			before := changes(t, w)
			prev, _ := w.Setting(ctx, c.key)
			v, old, err := w.SetSettingExplicit(ctx, c.key, c.value, c.allowZero)
			after := changes(t, w)
			if c.want == "" {
				now, _ := w.Setting(ctx, c.key)
				if errkind.Of(err) != errkind.Input || !strings.Contains(err.Error(), c.refusal) || !strings.Contains(errkind.HintOf(err), c.hint) ||
					len(after) != len(before) || now.Value != prev.Value || now.Source != prev.Source {
					t.Errorf("%s: %v (%v, hint %q), %d records then %d, %q then %q; want refused (Input) saying %q, %q in the hint, nothing stored or journalled",
						c.name, err, errkind.Of(err), errkind.HintOf(err), len(before), len(after), prev.Value, now.Value, c.refusal, c.hint)
				}
				continue
			}
			wantRec := journal.SettingChanged{Key: c.key, Old: prev.Value, OldSource: prev.Source, New: c.want}
			if err != nil || v.Value != c.want || v.Source != "stored" || old != prev.Value+" from "+prev.Source ||
				len(after) != len(before)+1 || after[len(after)-1] != wantRec {
				t.Errorf("%s: %+v %q %v, records %+v; want %s stored, %q from before, and %+v journalled",
					c.name, v, old, err, after[len(before):], c.want, prev.Value+" from "+prev.Source, wantRec)
			}
		}
		// SetSetting is SetSettingExplicit without asking for a zero.
		if _, _, err := w.SetSetting(ctx, "inbound_ttl", "0s"); errkind.Of(err) != errkind.Input {
			t.Errorf("SetSetting of a rail's zero: %v, want it refused", err)
		}
	})
}

// A reset forgets the stored value: what applies again (the environment's
// or the default) is answered and journalled with the old value; a
// setting not stored is left as it is and nothing is journalled; an
// environment value that cannot apply does not stop the reset, and the
// record says why nothing applies from it.
func TestResetSetting(t *testing.T) {
	const env = "KERNEL_STORAGE_DEFAULT_QUOTA_BYTES" // default_quota's
	forEachStore(t, func(t *testing.T, w *Writes) {
		if _, _, err := w.ResetSetting(ctx, "nope"); errkind.Of(err) != errkind.Input {
			t.Errorf("reset of no such setting: %v, want Input", err)
		}
		for _, c := range []struct {
			name, key, stored, env string
			want, wantSource       string // what applies after
			recorded               bool
		}{
			{name: "not stored", key: "busy_grace", want: "1d", wantSource: "default"},
			{name: "stored, to the default", key: "busy_grace", stored: "3d", want: "1d", wantSource: "default", recorded: true},
			{name: "stored, to the environment", key: "default_quota", stored: "2GiB", env: "1GiB", want: "1073741824", wantSource: "env " + env, recorded: true},
		} {
			t.Setenv(env, c.env)
			if c.stored != "" {
				if _, _, err := w.SetSetting(ctx, c.key, c.stored); err != nil {
					t.Fatal(err)
				}
			}
			prev, _ := w.Setting(ctx, c.key)
			before := changes(t, w)
			v, old, err := w.ResetSetting(ctx, c.key)
			after := changes(t, w)
			if err != nil || v.Value != c.want || v.Source != c.wantSource || old != prev.Value+" from "+prev.Source {
				t.Errorf("%s: %+v %q %v; want %s from %s, and %q from before", c.name, v, old, err, c.want, c.wantSource, prev.Value+" from "+prev.Source)
			}
			wantRec := journal.SettingChanged{Key: c.key, Old: prev.Value, OldSource: prev.Source, New: c.want, NewSource: c.wantSource, Reset: true}
			switch {
			case !c.recorded && len(after) != len(before):
				t.Errorf("%s: journalled %+v, want nothing", c.name, after[len(before):])
			case c.recorded && (len(after) != len(before)+1 || after[len(after)-1] != wantRec):
				t.Errorf("%s: records %+v, want %+v", c.name, after[len(before):], wantRec)
			}
		}
		// An environment value that is a rail's zero cannot apply: the
		// reset still forgets the stored value, and says why.
		if _, _, err := w.SetSetting(ctx, "default_quota", "3GiB"); err != nil {
			t.Fatal(err)
		}
		t.Setenv(env, "0")
		_, _, err := w.ResetSetting(ctx, "default_quota")
		recs := changes(t, w)
		last := recs[len(recs)-1]
		if err == nil || !last.Reset || last.Old != "3221225472" || last.New != "" || !strings.Contains(last.NewSource, env+"=0") {
			t.Errorf("reset under %s=0: %v, record %+v; want the reset journalled with why nothing applies, and its error", env, err, last)
		}
	})
}
