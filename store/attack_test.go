package store_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/xfsq/xfsq/store"
)

// TestDSNErrorsNeverQuotePassword: whatever form the password of a
// DSN takes, the error of opening it never holds the password's text,
// whole or in part (a keyword password with an unquoted space is split by
// libpq's parser, which quotes the second half).
func TestDSNErrorsNeverQuotePassword(t *testing.T) {
	for _, c := range []struct{ dsn, secret, fix string }{
		{"host=127.0.0.1 port=1 dbname=x password=hunter2 S3cretTail connect_timeout=1", "S3cretTail", "password='…'"},
		{"host=127.0.0.1 port=1 dbname=x password='hunter2 S3cretTail connect_timeout=1", "S3cretTail", "never closed"},
		{"postgres://u:hunter2%zzS3cretTail@127.0.0.1:1/x?connect_timeout=1", "S3cretTail", ""},
		{"postgres://u:pw@127.0.0.1:1/x?connect_timeout=1&sslpassword=S3cretTail&sslmode=bogus", "S3cretTail", ""},
		{"postgres://127.0.0.1:1/x?password=S3cretTail&sslmode=bogus", "S3cretTail", ""},
		{"host=127.0.0.1 port=1 dbname=x sslmode=bogus password=S3cretTail", "S3cretTail", ""},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		s, err := store.Open(ctx, c.dsn, "attack")
		cancel()
		if s != nil {
			s.Close()
		}
		if err != nil && strings.Contains(err.Error(), c.secret) {
			t.Errorf("opening %q: the error quotes the password: %v", store.Redact(c.dsn), err)
		}
		if c.fix != "" && (err == nil || !strings.Contains(err.Error(), c.fix)) {
			t.Errorf("opening %q: %v; want the fix named: %s", store.Redact(c.dsn), err, c.fix)
		}
	}
}
