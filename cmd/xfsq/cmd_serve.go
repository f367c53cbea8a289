package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/xfsq/xfsq/cmd/xfsq/internal/cliargs"
	"github.com/xfsq/xfsq/daemon"
	"github.com/xfsq/xfsq/health"
	"github.com/xfsq/xfsq/metrics"
	"github.com/xfsq/xfsq/sandbox"
	"github.com/xfsq/xfsq/server"
)

// The HTTP server's bounds: a slow or idle client cannot hold a
// connection for ever. Read and write are long enough for a file of
// max_file_bytes over a modest link, not for a client that stalls.
// Variables only so that a test can shorten them.
var (
	serveReadHeaderTimeout = 10 * time.Second
	serveReadTimeout       = 10 * time.Minute
	serveWriteTimeout      = 10 * time.Minute
	serveIdleTimeout       = 2 * time.Minute
)

const (
	serveMaxHeaderBytes = 64 << 10
	defaultListen       = "127.0.0.1:9742"
)

// serveGCPercent is the collector's headroom in a server, where GOGC does
// not set it. serve's live heap is a few MiB (the kept answers), so Go's
// default of 100 collects every few MiB allocated: at 30,000 checks a
// second some 25 collections a second, whose marking takes the CPU that
// requests then queue behind (the admission p99). Four times the headroom
// costs ~15 MiB and collects a quarter as often (docs/benchmarks.md: the RSS
// after ten minutes of load stays under its 64 MiB).
const serveGCPercent = 400

// serveMemoryLimit bounds what the headroom may grow to: with the
// scheduled passes running, four times the live heap came to more than a
// host gives a storage daemon (the RSS reached 82 MiB with a snapshot and a
// sweep pass a minute; docs/benchmarks.md). Near the limit the collector runs as
// often as it must; below it the headroom stays. The limit counts only
// Go's memory: the binary's mapped pages (some 16 MiB resident) come on top.
const serveMemoryLimit = 40 << 20

// setServeGC applies serveGCPercent and serveMemoryLimit unless the
// operator's GOGC or GOMEMLIMIT (getenv's) says otherwise.
func setServeGC(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(serveGCPercent)
	}
	if getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(serveMemoryLimit)
	}
}

func serveCommand(with func(fn func(e env) error) cli.ActionFunc) *cli.Command {
	return &cli.Command{
		Name: "serve", Usage: "the HTTP API (docs/api.md): projects, admission, leases, events, health",
		Description: "Serves the API on --listen (127.0.0.1:9742 by default: the bind address is what guards /metrics,\n" +
			"/healthz and /readyz, which need no token; --metrics-token-file puts /metrics behind a token of its own).\n" +
			"A non-loopback --listen needs --tls-cert and --tls-key, or --insecure-listen behind a TLS-terminating proxy.\n" +
			"A request whose Host is neither the listen address, a loopback name nor one of --allowed-hosts is refused\n" +
			"with 421 (a web page rebinding its name to this host must not read it through the operator's browser).\n" +
			"Every other endpoint needs Authorization: Bearer TOKEN,\n" +
			"from --token-file: " + daemon.TokenFileHelp + ".\n" +
			"The file must exist and must not be readable by every user (chmod 600); serve refuses to start\n" +
			"otherwise. SIGHUP reloads it; a bad file on reload keeps the tokens in force and logs why.\n" +
			"A token's name is the actor journalled for its changes; the token itself is never logged.\n" +
			"SIGTERM or SIGINT: stop accepting, let requests in flight finish within --grace, close the root, exit 0.\n" +
			"Logs (JSON, one access line per request) go to stderr.\n" +
			"The Go collector runs with GOGC=400 (a server's small heap would otherwise be collected every few MiB)\n" +
			"and GOMEMLIMIT=40MiB (so that the headroom never grows past it while the passes run);\n" +
			"GOGC and GOMEMLIMIT in the environment override them.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "listen", Value: defaultListen, Usage: "address to listen on (HOST:PORT)", EnvVars: []string{"XFSQ_LISTEN"}},
			&cli.StringFlag{Name: "token-file", Usage: "the bearer tokens (CSV: TOKEN,NAME,ROLE[,\"P1,P2\"]; mode 600)", EnvVars: []string{"XFSQ_TOKEN_FILE"}},
			&cli.StringFlag{Name: "tls-cert", Usage: "serve HTTPS with this certificate (PEM; with --tls-key)"},
			&cli.StringFlag{Name: "tls-key", Usage: "the certificate's private key (PEM)"},
			&cli.BoolFlag{Name: "insecure-listen", Usage: "allow a non-loopback --listen without TLS (a TLS-terminating proxy in front)"},
			&cli.StringFlag{Name: "allowed-hosts", Usage: "more names a request's Host may give, comma-separated (a proxy's public name)", EnvVars: []string{"XFSQ_ALLOWED_HOSTS"}},
			&cli.StringFlag{Name: "metrics-token-file", Usage: "require this file's token (Authorization: Bearer) on /metrics; mode 600", EnvVars: []string{"XFSQ_METRICS_TOKEN_FILE"}},
			&cli.DurationFlag{Name: "grace", Value: 30 * time.Second, Usage: "on SIGTERM, how long requests in flight may take to finish"},
		},
		Action: with(cmdServe),
	}
}

func cmdServe(e env) error {
	if e.c.NArg() > 0 {
		return cliargs.Usagef("serve takes no arguments, got %q: see xfsq serve --help", e.c.Args().First())
	}
	tokenPath := e.c.String("token-file")
	if tokenPath == "" {
		return cliargs.Usagef("serve needs a token file: --token-file FILE (or XFSQ_TOKEN_FILE), one line per token " +
			"TOKEN,NAME,ROLE[,\"P1,P2\"], mode 600 (contrib/xfsq-tokens.csv.example shows one)")
	}
	cert, key := e.c.String("tls-cert"), e.c.String("tls-key")
	if (cert == "") != (key == "") {
		return cliargs.Usagef("--tls-cert and --tls-key go together: give both, or neither for plain HTTP")
	}
	if err := checkListen(e.c.String("listen"), cert != "", e.c.Bool("insecure-listen")); err != nil {
		return err
	}
	allowed, err := allowedHosts(e.c.String("allowed-hosts"))
	if err != nil {
		return err
	}
	var metricsToken string
	if f := e.c.String("metrics-token-file"); f != "" {
		if metricsToken, err = daemon.LoadMetricsToken(f); err != nil {
			return err
		}
	}
	grace := e.c.Duration("grace")
	if grace <= 0 {
		return cliargs.Usagef("--grace %s: use a positive duration, e.g. 30s", grace)
	}
	tokens, err := daemon.OpenTokenFile(tokenPath)
	if err != nil {
		return err
	}
	setServeGC(os.Getenv)
	// One write per 100 ms, not one per request (daemon.LogBuffer); what
	// is buffered is written out as serve returns, whatever the reason.
	logs := daemon.NewLogBuffer(e.stderr, 100*time.Millisecond)
	defer logs.Close()
	log := slog.New(slog.NewJSONHandler(logs, nil))
	cfg, err := e.config()
	if err != nil {
		return err
	}
	ctx := e.c.Context
	root, err := sandbox.OpenRoot(ctx, cfg)
	if err != nil {
		return err
	}
	defer root.Close()
	checker, closeHealth, err := openHealthChecker(ctx, cfg)
	if err != nil {
		return err
	}
	defer closeHealth()
	srv, err := server.New(server.Config{Root: root, Tokens: tokens, Log: log, AccessLog: logs, Health: checker,
		Metrics: metrics.Handler(root, checker, log), MetricsToken: metricsToken,
		Listen: e.c.String("listen"), AllowedHosts: allowed})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", e.c.String("listen"))
	if err != nil {
		return cliargs.Usagef("--listen %s: %v", e.c.String("listen"), err)
	}
	hs := newHTTPServer(ctx, srv.Handler(), log)
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for range hup {
			tokens.Reload(log)
		}
	}()
	// The scheduled passes run beside the requests, never on one, and stop
	// between entries at SIGTERM (ctx); the root closes only after them.
	pctx, stopPasses := context.WithCancel(ctx)
	passesDone := make(chan struct{})
	go func() {
		defer close(passesDone)
		if err := (&daemon.Passes{Root: root, Log: log, Warm: srv.Warm}).Run(pctx); err != nil && pctx.Err() == nil {
			log.Error("scheduled passes stopped", "error", err.Error())
		}
	}()
	defer func() { stopPasses(); <-passesDone }()
	// The fleet view (GET /v1/fleet/hosts) shows this host stale when
	// these beats stop; they stop with the passes, before the root closes.
	beatsDone := make(chan struct{})
	go func() {
		defer close(beatsDone)
		(&server.Heartbeats{Root: root, Log: log}).Run(pctx)
	}()
	defer func() { stopPasses(); <-beatsDone }()
	// The journal's checkpoint, so that the next start's first scrape sums
	// only the records since it; it stops with the passes too.
	checkpointsDone := make(chan struct{})
	go func() {
		defer close(checkpointsDone)
		(&daemon.JournalCheckpoints{Root: root, Log: log}).Run(pctx)
	}()
	defer func() { stopPasses(); <-checkpointsDone }()
	served := make(chan error, 1)
	go func() {
		if cert != "" {
			served <- hs.ServeTLS(ln, cert, key)
		} else {
			served <- hs.Serve(ln)
		}
	}()
	scheme := "http"
	if cert != "" {
		scheme = "https"
	}
	log.Info("listening", "addr", ln.Addr().String(), "scheme", scheme, "root", root.Manager.Root, "backend", root.Manager.BackendName(),
		"tokens", tokens.Current().Len())
	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("stopping: no new connections; finishing requests in flight", "grace_seconds", grace.Seconds(), "signal", fmt.Sprint(context.Cause(ctx)))
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		hs.Close()
		return fmt.Errorf("stopped: requests still in flight after --grace %s were cut off", grace)
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	log.Info("stopped")
	return nil
}

// checkListen refuses to serve in clear text on an address other hosts
// can reach: every bearer token would cross the network readable.
func checkListen(listen string, tls, insecure bool) error {
	addr, err := net.ResolveTCPAddr("tcp", listen)
	if err != nil {
		return cliargs.Usagef("--listen %s: %v: use HOST:PORT, e.g. %s", listen, err, defaultListen)
	}
	if tls || insecure || (addr.IP != nil && addr.IP.IsLoopback()) {
		return nil
	}
	return cliargs.Usagef("--listen %s is not a loopback address, and without TLS every bearer token would cross the network in clear: "+
		"give --tls-cert and --tls-key, or --insecure-listen if a TLS-terminating proxy is in front and alone can reach it", listen)
}

// allowedHosts is --allowed-hosts, each name checked.
func allowedHosts(flag string) ([]string, error) {
	var out []string
	for n := range strings.SplitSeq(flag, ",") {
		name, err := server.ValidAllowedHost(n)
		if err != nil {
			return nil, cliargs.Usagef("--allowed-hosts: %v", err)
		}
		if name != "" {
			out = append(out, name)
		}
	}
	return out, nil
}

// newHTTPServer is serve's http.Server, with its bounds on slow clients.
func newHTTPServer(ctx context.Context, h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: serveReadHeaderTimeout,
		ReadTimeout:       serveReadTimeout,
		WriteTimeout:      serveWriteTimeout,
		IdleTimeout:       serveIdleTimeout,
		MaxHeaderBytes:    serveMaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		// Requests carry the actor in their context; the base is not the
		// signal context, so that a SIGTERM does not cancel requests in
		// flight: they get --grace to finish.
		BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
}

// openHealthChecker builds the checker xfsq health uses, from the same
// sources, so that GET /v1/system/health gives the same answer; it lives
// as long as the server, keeping its CPU sample and Docker cache.
func openHealthChecker(ctx context.Context, cfg sandbox.Config) (*health.Checker, func(), error) {
	const budget = 2 * time.Second
	src, err := sandbox.OpenHealth(ctx, cfg, budget)
	if err != nil {
		return nil, nil, err
	}
	docker, err := health.NewDocker(health.DockerOptions{CacheTTL: src.DockerCacheTTL})
	if err != nil {
		src.Close()
		return nil, nil, err
	}
	ch, err := health.New(health.Options{Root: src.Root, Thresholds: &src.Thresholds, Budget: budget, Docker: docker,
		Quota: src.Quota, Store: src.Store})
	if err != nil {
		docker.Close()
		src.Close()
		return nil, nil, err
	}
	return ch, func() { docker.Close(); src.Close() }, nil
}

func tokenCommand(with func(fn func(e env) error) cli.ActionFunc) *cli.Command {
	return &cli.Command{
		Name: "token", Usage: "tokens for serve's --token-file",
		Subcommands: []*cli.Command{{
			Name: "new", Usage: "make a random token and its --token-file line", ArgsUsage: "NAME reader|operator",
			Description: "Prints the token (give it to the caller: it is shown only here) and the line to add to the\n" +
				"token file, which holds only the token's SHA-256. Then reload serve with SIGHUP.",
			Flags:  []cli.Flag{&cli.StringSliceFlag{Name: "projects", Usage: "limit a reader to these projects (P1,P2)"}},
			Action: with(cmdTokenNew),
		}},
	}
}

func cmdTokenNew(e env) error {
	if e.c.NArg() != 2 {
		return cliargs.Usagef("token new takes NAME ROLE (reader or operator), got %d arguments: see xfsq token new --help", e.c.NArg())
	}
	secret, line, err := daemon.NewToken(e.c.Args().Get(0), e.c.Args().Get(1), e.c.StringSlice("projects"))
	if err != nil {
		return err
	}
	out := struct {
		Token string `json:"token"`
		Line  string `json:"line"`
	}{secret, line}
	return e.print(out, func(w io.Writer) {
		fmt.Fprintf(w, "token: %s\nline:  %s\n", secret, line)
	})
}
