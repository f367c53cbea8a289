package storetest

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xfsq/xfsq/internal/testsupport/prereq"
)

// PgBouncer starts PgBouncer (Debian's package pgbouncer) in transaction
// mode in front of a fresh database on the PostgreSQL of EnvPostgres, two
// server connections for every client, and returns a DSN through it. A
// database and not a schema: a schema is chosen by search_path in the
// startup packet, which PgBouncer does not pass on. Under CI=true a
// missing PostgreSQL or pgbouncer fails the test.
func PgBouncer(t testing.TB) string {
	t.Helper()
	base := os.Getenv(EnvPostgres)
	if base == "" {
		noteSkipped(t)
		prereq.Missing(t, "PgBouncer tests need "+EnvPostgres+"=postgres://user:pass@127.0.0.1/db?sslmode=disable (see .ci/run)")
	}
	bin, err := exec.LookPath("pgbouncer")
	if err != nil {
		prereq.Missing(t, "PgBouncer tests need pgbouncer: apt-get install pgbouncer (scripts/deps.sh test)")
	}
	u, err := url.Parse(base)
	if err != nil || u.User == nil {
		t.Fatalf("%s: a postgres:// URL with a user is needed for PgBouncer's tests", EnvPostgres)
	}
	name := made(t, base, "DATABASE", "xfsq_pgb_", "WITH (FORCE)") // the role needs CREATEDB
	pass, _ := u.User.Password()
	port := freePort(t)
	// Not t.TempDir, whose parent only root may enter: pgbouncer drops
	// root for nobody, who reads its config and writes its log here.
	dir, err := os.MkdirTemp("", "xfsq-pgbouncer-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	ini := fmt.Sprintf(`[databases]
%s = host=%s port=%s dbname=%s user=%s password=%s
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = any
pool_mode = transaction
default_pool_size = 2
max_client_conn = 200
ignore_startup_parameters = statement_timeout, lock_timeout, extra_float_digits
logfile = %s
`, name, u.Hostname(), portOf(u), name, u.User.Username(), pass, port, filepath.Join(dir, "pgbouncer.log"))
	cfg := filepath.Join(dir, "pgbouncer.ini")
	if err := os.WriteFile(cfg, []byte(ini), 0o644); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "pgbouncer.log"), nil, 0o644)
	os.Chmod(filepath.Join(dir, "pgbouncer.log"), 0o666)
	args := []string{cfg}
	if os.Geteuid() == 0 {
		args = []string{"-u", "nobody", cfg} // it refuses to run as root
	}
	cmd := exec.Command(bin, args...)
	var stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start pgbouncer: %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "pgbouncer.log"))
			t.Fatalf("pgbouncer did not listen on %s within 10s: %s%s", addr, stderr.String(), log)
		}
	}
	return fmt.Sprintf("postgres://%s:%s@%s/%s?sslmode=disable", url.PathEscape(u.User.Username()), url.PathEscape(pass), addr, name)
}

func portOf(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	return "5432"
}

func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
