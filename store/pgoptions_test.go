package store

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/xfsq/xfsq/internal/testsupport/storetest"
	"github.com/xfsq/xfsq/journal"
)

// binary_parameters halves an add's round trips (docs/benchmarks.md): on
// unless the operator's DSN says otherwise, in either form.
func TestBinaryParametersUnlessTheDSNSaysOtherwise(t *testing.T) {
	for _, c := range []struct {
		dsn  string
		want bool
	}{
		{"postgres://u:p@db/x?sslmode=disable", true},
		{"postgres://u:p@db/x", true},
		{"postgres://u:p@db/x?sslmode=disable&binary_parameters=no", false},
		{"postgres://u:p@db/x?binary_parameters=off", false},
		{"postgres://u:p@db/x?binary_parameters=yes", true},
		{"host=db dbname=x user=u", true},
		{"host=db dbname=x binary_parameters=no", false},
		{"host=db binary_parameters = 'off' dbname=x", false},
		{"host=db dbname=x password='binary_parameters=no'", true}, // a password is not a keyword
		{"host=db dbname=x binary_parameters=yes", true},
	} {
		cfg, _, err := postgresConfig(c.dsn)
		if err != nil {
			t.Errorf("%s: %v", c.dsn, err)
			continue
		}
		if cfg.BinaryParameters != c.want {
			t.Errorf("%s: binary_parameters %v, want %v", c.dsn, cfg.BinaryParameters, c.want)
		}
	}
	if _, _, err := postgresConfig("host=db binary_parameters=maybe"); err == nil {
		t.Error("binary_parameters=maybe was accepted")
	}
}

// Every kind of value the store binds comes back as it went, with binary
// parameters (the default) and without: bytes (a plan's body, every byte
// value, NUL and invalid UTF-8 included), JSON text (an event's payload)
// and times (microseconds).
func TestValuesRoundTripWithAndWithoutBinaryParameters(t *testing.T) {
	base := storetest.Postgres(t)
	for _, opt := range []string{"", "&binary_parameters=no"} {
		s := open(t, base+opt)
		body := make([]byte, 0, 512)
		for i := range 256 {
			body = append(body, byte(i), byte(255-i))
		}
		at := time.Date(2026, 12, 5, 14, 3, 7, 123456789, time.UTC)
		id := "plan" + opt
		if err := s.RecordPlan(ctx, id, "d1", at, body); err != nil {
			t.Fatalf("%q: %v", opt, err)
		}
		p, err := s.Plan(ctx, id)
		if err != nil {
			t.Fatalf("%q: %v", opt, err)
		}
		if !bytes.Equal(p.Body, body) || !p.CreatedAt.Equal(at.Truncate(time.Microsecond)) || p.Digest != "d1" {
			t.Errorf("%q: plan read back as digest %q at %v, %d bytes (equal: %v)", opt, p.Digest, p.CreatedAt, len(p.Body), bytes.Equal(p.Body, body))
		}
		path := "a/é\u2028<b>&'\"\\\x01" + opt
		evicted(t, s, "omni", "s1", path, journal.StateDone)
		evs, err := s.Events(ctx, EventFilter{Project: "omni", Limit: 1})
		if err != nil || len(evs) != 1 {
			t.Fatalf("%q: %d events, %v", opt, len(evs), err)
		}
		var rec struct{ Path string }
		if err := json.Unmarshal(evs[0].Payload, &rec); err != nil || rec.Path != path {
			t.Errorf("%q: payload %s (%v), want path %q", opt, evs[0].Payload, err, path)
		}
	}
}
