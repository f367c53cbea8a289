package store

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/internal/testsupport/storetest"
)

// silentServer accepts connections on loopback and never answers: a
// database whose host is up and whose link or process is hung.
func silentServer(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var held []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range held {
			c.Close()
		}
		mu.Unlock()
	})
	return ln.Addr().String()
}

// fullBacklog is a listening socket that never accepts, its queue filled:
// the kernel drops a new connection's SYN as a blackholed route does.
func fullBacklog(t *testing.T) string {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", sa.(*unix.SockaddrInet4).Port)
	for i := 0; ; i++ {
		if i == 16 {
			t.Fatalf("the backlog of %s never filled", addr)
		}
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err != nil {
			break // full: this SYN was dropped
		}
		t.Cleanup(func() { c.Close() })
	}
	return addr
}

// refusing is a loopback port nothing listens on.
func refusing(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func pgAt(addr, params string) string {
	return "postgres://xfsq:s3cret@" + addr + "/xfsq?sslmode=disable" + params
}

// Opening a store that refuses, accepts and never answers, or never
// accepts returns an UnreachableError that says which, within the
// budget: connect_timeout, or the caller's deadline when shorter.
func TestOpenUnreachableWithinBudget(t *testing.T) {
	for _, c := range []struct {
		name     string
		addr     func(*testing.T) string
		params   string
		deadline time.Duration // 0: none
		budget   time.Duration
		refused  bool
	}{
		{"refused", refusing, "", 0, time.Second, true},
		{"accepts, never answers", silentServer, "&connect_timeout=1", 0, time.Second, false},
		{"never accepts", fullBacklog, "&connect_timeout=1", 0, time.Second, false},
		{"never accepts, caller's deadline", fullBacklog, "", 300 * time.Millisecond, 300 * time.Millisecond, false},
		{"accepts, never answers, default bounds", silentServer, "", 0, DefaultPostgresOptions.ConnectTimeout, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			addr := c.addr(t)
			ctx := context.Background()
			if c.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, c.deadline)
				defer cancel()
			}
			start := time.Now()
			s, err := Open(ctx, pgAt(addr, c.params), "h")
			took := time.Since(start)
			if err == nil {
				s.Close()
				t.Fatal("opened a store that does not answer")
			}
			var u *UnreachableError
			if !errors.As(err, &u) {
				t.Fatalf("error %T %q: want an UnreachableError", err, err)
			}
			if u.Refused != c.refused || u.TimedOut == c.refused || u.Addr != addr {
				t.Errorf("%+v: want refused=%v at %s", u, c.refused, addr)
			}
			if took > c.budget+time.Second {
				t.Errorf("took %s: the budget was %s", took, c.budget)
			}
			if msg := err.Error(); !strings.Contains(msg, "store unreachable") || strings.Contains(msg, "s3cret") {
				t.Errorf("message %q: want it to say store unreachable, without the password", msg)
			}
		})
	}
}

// A store whose link is blackholed after it opened answers every call
// with an UnreachableError within the call's deadline, or within the
// store's own budget when the call has none; and the pool recovers by
// itself once the link is back.
func TestBlackholedStoreAnswersWithinBudget(t *testing.T) {
	p := storetest.NewProxy(t, storetest.Postgres(t))
	// The schema is made under the default bounds first: on a loaded
	// machine the migrations can take longer than the 500 ms under test.
	pre, err := Open(ctx, p.DSN, "h")
	if err != nil {
		t.Fatal(err)
	}
	pre.Close()
	s, err := Open(ctx, p.DSN+"&statement_timeout=500&connect_timeout=1", "h")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Events(ctx, EventFilter{}); err != nil {
		t.Fatal(err)
	}
	p.Blackhole()
	call := func(c context.Context) (time.Duration, error) {
		start := time.Now()
		_, err := s.Events(c, EventFilter{})
		return time.Since(start), err
	}
	short, cancel := context.WithTimeout(ctx, 400*time.Millisecond)
	defer cancel()
	for _, c := range []struct {
		name   string
		ctx    context.Context
		budget time.Duration
	}{
		{"the caller's deadline", short, 400 * time.Millisecond},
		// A pooled connection reads for statement_timeout plus the
		// network's margin; a new one connects within connect_timeout.
		{"no deadline: the store's bound", ctx, s.Bounds().ReadBound()},
	} {
		took, err := call(c.ctx)
		var u *UnreachableError
		if !errors.As(err, &u) || !u.TimedOut {
			t.Fatalf("%s: error %T %v: want an UnreachableError that timed out", c.name, err, err)
		}
		if took > c.budget+time.Second {
			t.Errorf("%s: took %s, budget %s", c.name, took, c.budget)
		}
		if !strings.Contains(err.Error(), "did not answer within") {
			t.Errorf("%s: %q does not say it timed out", c.name, err)
		}
	}
	p.Restore(t)
	if _, err := s.Events(ctx, EventFilter{}); err != nil {
		t.Fatalf("after the link came back: %v", err)
	}
}

// A request's budget (WithBudget) bounds all its store calls together:
// against a blackholed store the first call ends when the budget does,
// however long the store's own bounds are, and every later call of the
// request fails at once without a wait of its own. The calls of a
// request that stays within its budget are charged what they took.
func TestRequestBudgetBoundsAllItsCalls(t *testing.T) {
	p := storetest.NewProxy(t, storetest.Postgres(t))
	s, err := Open(ctx, p.DSN, "h") // the default bounds: seconds per call
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	live := WithBudget(ctx, time.Minute)
	if _, err := s.Events(live, EventFilter{}); err != nil {
		t.Fatal(err)
	}
	if left, ok := BudgetLeft(live); !ok || left >= time.Minute || left <= 0 {
		t.Errorf("a call within the budget left %s of a minute: want it charged", left)
	}
	const budget = 700 * time.Millisecond
	p.Blackhole()
	req := WithBudget(ctx, budget)
	start := time.Now()
	calls := []func() error{
		func() error { _, err := s.Events(req, EventFilter{}); return err },
		func() error { return s.InTx(req, func(tx *Tx) error { return tx.Lock(req, "budget") }) },
		func() error { _, err := s.ChangeMark(req); return err },
		func() error { _, err := s.Read(req, TreeKey{Project: "p", Area: "workspace"}); return err },
	}
	for i, call := range calls {
		err := call()
		var u *UnreachableError
		if !errors.As(err, &u) || !u.TimedOut {
			t.Fatalf("call %d: error %T %v: want an UnreachableError that timed out", i, err, err)
		}
		if i > 0 && !strings.Contains(err.Error(), "request's budget of 700ms") {
			t.Errorf("call %d: %q does not name the request's budget", i, err)
		}
	}
	if took := time.Since(start); took > budget+500*time.Millisecond {
		t.Errorf("%d calls took %s against a blackholed store: the request's budget was %s", len(calls), took, budget)
	}
	if b := s.Bounds(); b.ReadBound() < 5*budget {
		t.Fatalf("the store's own bound %s is no longer than the budget: the test proves nothing", b.ReadBound())
	}
	p.Restore(t)
	if _, err := s.Events(WithBudget(ctx, 5*time.Second), EventFilter{}); err != nil {
		t.Fatalf("a new request after the link came back: %v", err)
	}
}

// The DSN's bounds reach the server (statement_timeout, lock_timeout as
// run-time parameters) and the pool; xfsq's own keywords do not reach
// the server, which would refuse them; a bound of 0 is refused.
func TestPostgresOptionsFromTheDSN(t *testing.T) {
	dsn := storetest.Postgres(t)
	s := open(t, dsn+"&statement_timeout=3s&lock_timeout=1500&keepalives_idle=7&pool_max_open=4&pool_max_idle=1&tcp_user_timeout=9000&prepare=no")
	var st, lt string
	if err := s.SQL.QueryRow(`SELECT current_setting('statement_timeout'), current_setting('lock_timeout')`).Scan(&st, &lt); err != nil {
		t.Fatal(err)
	}
	if st != "3s" || lt != "1500ms" {
		t.Errorf("server has statement_timeout=%s lock_timeout=%s, want 3s and 1500ms", st, lt)
	}
	b := s.Bounds()
	if b.KeepaliveIdle != 7*time.Second || b.PoolMaxOpen != 4 || b.PoolMaxIdle != 1 || b.UserTimeout != 9*time.Second || b.Prepare ||
		b.ConnectTimeout != DefaultPostgresOptions.ConnectTimeout {
		t.Errorf("bounds %+v", b)
	}
	if got := s.SQL.Stats().MaxOpenConnections; got != 4 {
		t.Errorf("pool opens %d, want 4", got)
	}
	for _, bad := range []string{"&statement_timeout=0", "&lock_timeout=soon", "&pool_max_open=0", "&keepalives=0", "&prepare=maybe"} {
		if _, err := Open(ctx, dsn+bad, "h"); err == nil || !strings.Contains(err.Error(), strings.Split(strings.TrimPrefix(bad, "&"), "=")[0]) {
			t.Errorf("%s: error %v, want one naming the keyword", bad, err)
		}
	}
}
