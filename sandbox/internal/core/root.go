package core

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/quota"
	"github.com/xfsq/xfsq/quota/xfs"
	"github.com/xfsq/xfsq/sandbox/internal/core/diskfull"
	"github.com/xfsq/xfsq/store"
)

// IDRange is a range of project IDs to allocate from; a shell names it
// without importing the kernel backend.
type IDRange = xfs.IDRange

// ParseIDRange reads "FIRST-LAST", whole numbers only.
func ParseIDRange(s string) (IDRange, error) {
	// Whole numbers only: Sscanf stopped at "100-200junk" and took it.
	a, b, ok := strings.Cut(s, "-")
	first, err1 := strconv.ParseUint(a, 10, 32)
	last, err2 := strconv.ParseUint(b, 10, 32)
	if !ok || err1 != nil || err2 != nil {
		return IDRange{}, &InputError{Msg: fmt.Sprintf("ID range %q: use FIRST-LAST, e.g. 100000-199999", s)}
	}
	return IDRange{First: quota.ProjectID(first), Last: quota.ProjectID(last)}, nil
}

// FullDisk says what OpenRoot may do when the filesystem holding an
// embedded store is full: what is safe depends on what the caller will do.
type FullDisk int

const (
	// FullDiskRefuse fails, saying what is full and what to do.
	FullDiskRefuse FullDisk = iota
	// FullDiskReadOnly opens the store read-only: for callers that only read.
	FullDiskReadOnly
	// FullDiskSpendReserve deletes the reserve beside the store and tries
	// again: for callers that free room and must journal what they delete.
	FullDiskSpendReserve
)

// Config is everything a shell knows about the root it serves. The
// library, not the shell, decides the order in which it is checked and
// opened, and owns what it opens until Root.Close.
type Config struct {
	Root string
	// DSN is the store: a PostgreSQL URL or keywords, or a SQLite file;
	// "" is the root's own ROOT/.xfsq/xfsq.db.
	DSN string
	// Host is this host's name in a shared store; "" is the hostname.
	Host string
	// Range of project IDs; zero is xfs.DefaultRange.
	Range IDRange
	// ProjectFiles name IDs taken by hand; nil means /etc/projid and /etc/projects.
	ProjectFiles []string
	// Init prepares the root (xfsq init): its layout, and the store, which
	// only then may be created.
	Init bool
	// Backend is init's choice of quota backend: auto (""), xfs (fail
	// unless the kernel enforces XFS project quotas) or fallback. Init
	// records it; every later open keeps to it.
	Backend string
	// FullDisk: what to do when an embedded store's filesystem is full.
	FullDisk FullDisk
	// TakeOverHost lets init bind Host to this root while another root
	// holds it (journalled): for a root replacing one gone for good.
	TakeOverHost bool
}

// LocalDSN is the store a root has when Config.DSN is empty.
func LocalDSN(root string) string { return filepath.Join(root, StateDir, "xfsq.db") }

func (c Config) dsn(root string) string {
	if c.DSN != "" {
		return c.DSN
	}
	return LocalDSN(root)
}

func (c Config) host() string {
	if c.Host != "" {
		return c.Host
	}
	h, _ := os.Hostname()
	return h
}

// Root is an open sandbox root: its store and its manager, owned together.
type Root struct {
	*Manager
	// Init is what init found and made (Config.Init only).
	Init *InitResult
	// Note is what the caller should tell the operator about how the root
	// was opened (e.g. the store is read-only on a full disk); "" when nothing.
	Note string

	reserve bool
}

// Close closes the manager and the store and puts back the local store's
// reserve, so that the next full disk still has room to journal a delete.
func (r *Root) Close() error {
	err := r.Manager.Close()
	if r.reserve {
		diskfull.EnsureReserve(filepath.Join(r.Manager.Root, StateDir))
	}
	return errors.Join(err, r.Manager.Store.Close())
}

// errNoRoot is a root directory that is missing: nothing is created then,
// not even the store.
func errNoRoot(root string) error {
	return errkind.WithHint(errkind.NotReady, fmt.Errorf("sandbox root %s does not exist or is not a directory", root),
		"create or mount it first (scripts/loopback-xfs.sh makes an XFS one)")
}

// OpenRoot opens the root cfg names: the root first (it must exist, and
// be initialised unless cfg.Init), then the store (created only by init:
// a SQLite file named by cfg.DSN that does not exist is refused, since
// opening would create an empty store in its place), then the backend.
func OpenRoot(ctx context.Context, cfg Config) (*Root, error) {
	if cfg.Root == "" {
		return nil, &InputError{Msg: "no sandbox root given"}
	}
	root, err := filepath.Abs(cfg.Root)
	if err != nil {
		return nil, err
	}
	if cfg.TakeOverHost && !cfg.Init {
		return nil, fieldErrorf("take_over_host", "is for an init only: a host name is taken over as a root is initialised")
	}
	if cfg.Backend != "" {
		if !cfg.Init {
			return nil, fieldErrorf("backend", "is chosen as the root is initialised (init), not by %q", cfg.Backend)
		}
		if err := ValidateBackend(cfg.Backend); err != nil {
			return nil, err
		}
	}
	firstInit := false
	if cfg.Init {
		if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
			return nil, errNoRoot(root)
		}
		// Before the store is opened: opening a SQLite store makes .xfsq/.
		_, err = os.Stat(filepath.Join(root, StateDir))
		firstInit = errors.Is(err, fs.ErrNotExist)
	} else {
		if err := CheckRoot(root); err != nil {
			return nil, err
		}
		if err := checkStoreExists(cfg.DSN); err != nil {
			return nil, err
		}
	}
	dsn := cfg.dsn(root)
	st, note, err := openStore(ctx, root, dsn, cfg)
	if err != nil {
		return nil, err
	}
	o := Options{Root: root, Store: st, Range: cfg.Range, ProjectFiles: cfg.ProjectFiles, FirstInit: firstInit, TakeOverHost: cfg.TakeOverHost}
	note = joinNotes(note, defaultHostNote(cfg, st))
	if cfg.Init {
		o.Backend = cfg.Backend // "": the choice recorded by an earlier init, else auto
	}
	r := &Root{Note: note, reserve: dsn == LocalDSN(root) && !st.ReadOnly()}
	if cfg.Init {
		m, res, err := Init(ctx, o)
		if err != nil {
			st.Close()
			return nil, err
		}
		if st.Driver() == "sqlite" {
			res.Store = "sqlite (" + dsn + ")"
		}
		if n := defaultHostNote(cfg, st); n != "" {
			res.Notes = append(res.Notes, n)
		}
		r.Manager, r.Init, r.reserve = m, &res, false
		return r, nil
	}
	m, err := Open(ctx, o)
	if err != nil {
		if r.reserve {
			diskfull.EnsureReserve(filepath.Join(root, StateDir))
		}
		st.Close()
		return nil, err
	}
	r.Manager = m
	return r, nil
}

// checkStoreExists refuses a SQLite store named explicitly that is not
// there: a typo in its path would otherwise create an empty store, its
// parents included, and every project would seem gone.
func checkStoreExists(dsn string) error {
	if dsn == "" {
		return nil
	}
	kind, err := store.Classify(dsn)
	if err != nil {
		return &InputError{Msg: err.Error()}
	}
	if kind != store.KindSQLite {
		return nil
	}
	if _, err := os.Stat(dsn); errors.Is(err, fs.ErrNotExist) {
		return errkind.WithFix(errkind.Input, fmt.Errorf("the store %s does not exist", dsn),
			errkind.Fix("check its path for a typo; only %s creates a store", errkind.Do(errkind.OpInit, "")))
	}
	return nil
}

// openStore opens (creating or migrating) the store; when that fails
// because the filesystem holding an embedded store is full, it does what
// cfg.FullDisk allows, and otherwise says what is full and what to do.
func openStore(ctx context.Context, root, dsn string, cfg Config) (*store.Store, string, error) {
	st, err := store.Open(ctx, dsn, cfg.host())
	// Init says a full disk in its own words: it is not a root in use.
	if err == nil || store.IsPostgres(dsn) || cfg.Init {
		return st, "", err
	}
	full := diskfull.Check(filepath.Dir(dsn), 0, err)
	if full == nil {
		return nil, "", err
	}
	if dsn == LocalDSN(root) {
		full.Dir = root // what the operator knows it by
	}
	why := err.Error()
	switch cfg.FullDisk {
	case FullDiskReadOnly:
		st, err := store.OpenReadOnly(ctx, dsn, cfg.host())
		if err == nil {
			note := *full
			note.Err = nil
			return st, fmt.Sprintf("%v: the store was opened read-only", &note), nil
		}
		why += "; read-only: " + err.Error()
	case FullDiskSpendReserve:
		if diskfull.ReleaseReserve(filepath.Join(root, StateDir)) {
			st, err := store.Open(ctx, dsn, cfg.host())
			if err == nil {
				return st, "", nil
			}
			why += "; after spending the reserve: " + err.Error()
		}
	}
	return nil, "", cannotWriteStore(full, dsn, why)
}

// cannotWriteStore is a store that a full filesystem keeps from opening:
// full says what is full, the hint what to do (in the CLI's words).
func cannotWriteStore(full *diskfull.Error, dsn, why string) error {
	full.Err = fmt.Errorf("xfsq cannot write its store %s (%s)", dsn, why)
	return errkind.WithFieldHint(errkind.NotReady, full, "free space there (reads, and the removals and sweeps that free space, still work), "+
		"and keep the store on another filesystem (%s) so that it never fills with the trees", "db")
}

// defaultHostNote says that a shared store names this host by the OS
// hostname because no host name was given: a machine renamed, or a clone
// under the same hostname, would then act under another name or this one.
func defaultHostNote(cfg Config, st *store.Store) string {
	if cfg.Host != "" || st.Driver() != "postgres" {
		return ""
	}
	return fmt.Sprintf("no host name was given: this host is %q in the shared store (the OS hostname); name it explicitly, "+
		"so that a renamed machine keeps its records and a clone cannot take them", st.Host)
}

func joinNotes(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	return a + "; " + b
}
