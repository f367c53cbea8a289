package store

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/lib/pq"
)

// PostgresOptions bound every wait on a PostgreSQL store and size its pool.
// They are read from the DSN when it is opened, as libpq's keywords (or a
// URL's query parameters), each defaulted when absent: a database that
// refuses, drops packets or hangs then costs a request seconds, never the
// minutes the kernel's TCP timers would let it wait.
type PostgresOptions struct {
	// ConnectTimeout bounds making a connection, its handshake included
	// (connect_timeout, seconds as libpq writes it).
	ConnectTimeout time.Duration
	// StatementTimeout and LockTimeout are PostgreSQL's own
	// statement_timeout and lock_timeout, sent at connection start: the
	// server gives up on a statement (or a wait for a lock, advisory ones
	// included) after them.
	StatementTimeout, LockTimeout time.Duration
	// KeepaliveIdle, KeepaliveInterval and KeepaliveCount are TCP
	// keepalives (keepalives_idle, keepalives_interval, keepalives_count,
	// in seconds as libpq's): a connection idle in the pool whose peer
	// vanished is found dead before a request picks it.
	KeepaliveIdle, KeepaliveInterval time.Duration
	KeepaliveCount                   int
	// UserTimeout is TCP_USER_TIMEOUT (tcp_user_timeout, milliseconds as
	// libpq's): data sent and never acknowledged fails the connection after
	// it, where keepalives do not apply.
	UserTimeout time.Duration
	// PoolMaxOpen and PoolMaxIdle size the process's pool (pool_max_open,
	// pool_max_idle: xfsq's own keywords, never sent to the server).
	PoolMaxOpen, PoolMaxIdle int
	// Prepare keeps the statements a server asks many times a second
	// prepared on each connection (prepare, xfsq's keyword: yes, the
	// default, or no). Behind PgBouncer before 1.21 in transaction mode a
	// prepared statement is not where the next transaction runs: there
	// prepare=no sends each as it is asked (docs/fleet.md).
	Prepare bool
}

// DefaultPostgresOptions are the bounds a DSN that names none gets: a
// fleet of hosts shares the server's max_connections (docs/fleet.md).
var DefaultPostgresOptions = PostgresOptions{
	ConnectTimeout:    5 * time.Second,
	StatementTimeout:  15 * time.Second,
	LockTimeout:       10 * time.Second,
	KeepaliveIdle:     10 * time.Second,
	KeepaliveInterval: 5 * time.Second,
	KeepaliveCount:    3,
	UserTimeout:       20 * time.Second,
	PoolMaxOpen:       8,
	PoolMaxIdle:       2,
	Prepare:           true,
}

// networkMargin is what a call may wait beyond the server's own statement
// timeout: the time its answer takes to travel. A read that waits longer
// has lost the server, not a slow statement.
const networkMargin = 5 * time.Second

// ReadBound is the longest one read from the server may wait: the
// server answers (or errs) within statement_timeout.
func (o PostgresOptions) ReadBound() time.Duration { return o.StatementTimeout + networkMargin }

// CallBudget is the deadline a store call without one of its own gets: a
// connection to make, then a statement to run.
func (o PostgresOptions) CallBudget() time.Duration {
	return o.ConnectTimeout + o.StatementTimeout + networkMargin
}

// xfsqKeywords are read here and never reach lib/pq, which would send an
// unknown keyword to the server as a run-time parameter (and the server
// refuse it).
var xfsqKeywords = []string{"keepalives", "keepalives_idle", "keepalives_interval", "keepalives_count", "tcp_user_timeout",
	"pool_max_open", "pool_max_idle", "prepare"}

// postgresConfig parses dsn (kind from Classify) as lib/pq does and merges
// the options it names with the defaults. Its errors never quote dsn.
func postgresConfig(dsn string) (pq.Config, PostgresOptions, error) {
	o := DefaultPostgresOptions
	cfg, err := pq.NewConfig(dsn)
	if err != nil {
		return cfg, o, fmt.Errorf("database %s: %w", Redact(dsn), scrub(err, dsn))
	}
	if !namesBinaryParameters(dsn) {
		cfg.BinaryParameters = true
	}
	bad := func(key, value, want string) error {
		return fmt.Errorf("database %s: %s=%q: %s", Redact(dsn), key, value, want)
	}
	switch {
	case cfg.ConnectTimeout > 0:
		o.ConnectTimeout = cfg.ConnectTimeout
	default:
		// 0 is libpq's "wait for ever": no wait on the store is unbounded.
		cfg.ConnectTimeout = o.ConnectTimeout
	}
	rt := cfg.Runtime
	if rt == nil {
		rt = map[string]string{}
	}
	for _, p := range []struct {
		key string
		dst *time.Duration
	}{{"statement_timeout", &o.StatementTimeout}, {"lock_timeout", &o.LockTimeout}} {
		v, ok := rt[p.key]
		if !ok {
			rt[p.key] = strconv.FormatInt(p.dst.Milliseconds(), 10)
			continue
		}
		d, err := serverDuration(v)
		if err != nil || d <= 0 {
			return cfg, o, bad(p.key, v, "give a positive duration (milliseconds, or with a unit: 15s); 0 would let a statement wait for ever")
		}
		*p.dst = d
	}
	for _, p := range []struct {
		key  string
		unit time.Duration
		dst  *time.Duration
	}{{"keepalives_idle", time.Second, &o.KeepaliveIdle}, {"keepalives_interval", time.Second, &o.KeepaliveInterval},
		{"tcp_user_timeout", time.Millisecond, &o.UserTimeout}} {
		if v, ok := rt[p.key]; ok {
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				return cfg, o, bad(p.key, v, "give a positive whole number ("+strings.TrimPrefix(p.unit.String(), "1")+")")
			}
			*p.dst = time.Duration(n) * p.unit
		}
	}
	for _, p := range []struct {
		key string
		dst *int
	}{{"keepalives_count", &o.KeepaliveCount}, {"pool_max_open", &o.PoolMaxOpen}, {"pool_max_idle", &o.PoolMaxIdle}} {
		if v, ok := rt[p.key]; ok {
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				return cfg, o, bad(p.key, v, "give a positive whole number")
			}
			*p.dst = n
		}
	}
	if v, ok := rt["prepare"]; ok {
		switch v {
		case "yes", "on", "true", "1":
			o.Prepare = true
		case "no", "off", "false", "0":
			o.Prepare = false
		default:
			return cfg, o, bad("prepare", v, "give yes or no (no: behind PgBouncer before 1.21 in transaction mode)")
		}
	}
	if v, ok := rt["keepalives"]; ok && v != "1" {
		return cfg, o, bad("keepalives", v, "xfsq always uses TCP keepalives: leave keepalives out, or tune keepalives_idle")
	}
	if o.PoolMaxIdle > o.PoolMaxOpen {
		o.PoolMaxIdle = o.PoolMaxOpen
	}
	for _, k := range xfsqKeywords {
		delete(rt, k)
	}
	cfg.Runtime = rt
	return cfg, o, nil
}

// binaryParameters is lib/pq's keyword for sending a statement's
// parameters with it (Parse, Bind, Execute and Sync in one write): one
// round trip a statement where lib/pq otherwise makes two (it parses the
// unnamed statement and waits for its description before binding). xfsq
// turns it on unless the DSN says otherwise (binary_parameters=no). Its
// only other effect is that []byte parameters travel in binary, which is
// what a bytea column takes; xfsq binds JSON and times as text and integers.
// Behind PgBouncer in transaction mode it is the safer of the two: each
// statement is one Sync, so no server connection can change between its
// parse and its execution.
const binaryParameters = "binary_parameters"

// namesBinaryParameters reports whether dsn (a URL or libpq keywords)
// sets binary_parameters, as lib/pq reads it: in a URL's query, or as a
// keyword (the last one wins: a value put before dsn's own stands only
// when dsn has none).
func namesBinaryParameters(dsn string) bool {
	if urlScheme().MatchString(dsn) {
		u, err := url.Parse(dsn)
		return err == nil && u.Query().Has(binaryParameters)
	}
	on, err := pq.NewConfig(binaryParameters + "=yes " + dsn)
	off, err2 := pq.NewConfig(binaryParameters + "=no " + dsn)
	return err == nil && err2 == nil && on.BinaryParameters == off.BinaryParameters
}

// serverDuration reads a duration as PostgreSQL's settings take it: a
// number of milliseconds, or a number with one of its units.
func serverDuration(v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	i := strings.IndexFunc(v, func(r rune) bool { return r < '0' || r > '9' })
	if i == 0 {
		return 0, fmt.Errorf("not a duration")
	}
	num, unit := v, "ms"
	if i > 0 {
		num, unit = v[:i], strings.TrimSpace(v[i:])
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil {
		return 0, err
	}
	units := map[string]time.Duration{"us": time.Microsecond, "ms": time.Millisecond, "s": time.Second, "min": time.Minute, "h": time.Hour, "d": 24 * time.Hour}
	u, ok := units[unit]
	if !ok {
		return 0, fmt.Errorf("unknown unit %q", unit)
	}
	return time.Duration(n) * u, nil
}
