// Package core manages a whole sandbox root, beneath the facade shells hold
// (package sandbox, the only importer Go allows outside sandbox/): it opens one (OpenRoot, the
// composition root every shell uses: the root checked first, then the
// store, then the quota backend, all owned and closed together) and runs
// every operation on it but those of the use cases beside it (project add
// and rm and a run's leases, retention's sweeps, doctor, the read model's
// answers, the accounting of writes, the fleet view, the walks kept as
// snapshots, what health reads of a root) — init, the making of a tree
// (trees.go: project add's, init's inbound tree, doctor's repair), project
// set, show and every tree's figures (Report, Usage: read beneath it by
// sandbox/internal/core/usage, with the read cache they share; their
// vocabulary and admission's rule are the leaf sandbox/internal/core/figures;
// a tree is walked by the leaf sandbox/internal/core/treewalk), and
// settings. It ties the store (the registry and journal) to the quota
// backend (the kernel's or the fallback's
// enforcement). The CLI and the HTTP server are shells over the facade:
// each maps its input to one call and encodes the answer, so they can
// never disagree. Who asks comes from
// the context (WithActor); how fresh a read must be, from the caller
// (Read); what kind a failure is, from errkind.
//
// Every operation that leaves records of work in progress (an add, a
// removal, a sweep, a doctor pass, a write) runs as an operation of its own
// (BeginOp): its holder, pid.start@host/op-N, tells a live operation from a
// gone one in this process as in any other, so a long-lived process (the
// server) behaves as many one-shot ones would. Writes through xfsq are
// accounted beside it (sandbox/internal/writes, which implements what the
// file layer needs, files.Core); what they share with retention and doctor
// stays here: the credit of a removal (credit.go) and the removal of a
// reclaimed write's temporary file (reservations.go).
//
// It must never touch anything outside the root, never delete data that it
// did not create (rollback removes only empty directories it made), never
// change a project without journalling it, never walk or write on a read
// unless the caller asks (but to journal a limit reached, which whoever
// sees it first records: the crossings of usage), and never name a shell's flags in its messages
// (a hint for the operator travels beside them).
package core

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/files"
	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/quota"
	"github.com/xfsq/xfsq/quota/fallback"
	"github.com/xfsq/xfsq/quota/xfs"
	"github.com/xfsq/xfsq/sandbox/internal/core/identity"
	"github.com/xfsq/xfsq/sandbox/internal/core/usage"
	"github.com/xfsq/xfsq/settings"
	"github.com/xfsq/xfsq/store"
)

// RootOwner names the owner of the root's own trees (the inbound tree)
// wherever a project name is asked for: report rows, metrics' project
// label, `--area inbound` commands (PROJECT _root). It breaks the project
// name rule, so it can never be a tenant's name.
const RootOwner = store.RootOwner

// areaDefaultQuota names the setting that gives each area's hard byte
// limit to a new tree.
var areaDefaultQuota = map[string]string{area.Workspace: "default_quota", area.Cache: "default_cache_quota",
	area.Scratch: "default_scratch_quota", area.Inbound: "default_inbound_quota"}

// StateDir is xfsq's own state under the root.
const StateDir = ".xfsq"

// InputError is bad input from the caller: a name, size, area or value.
type InputError struct {
	Msg   string
	Param string // the field at fault, when one is (see Field)
}

func (e *InputError) Error() string { return e.Msg }

func inputErrorf(format string, args ...any) error {
	return &InputError{Msg: fmt.Sprintf(format, args...)}
}

// ErrExists and ErrNotFound are wrapped by errors that name the project.
var (
	ErrExists   = errkind.Sentinel(errkind.Conflict, "already exists")
	ErrNotFound = errkind.Sentinel(errkind.NotFound, "not found")
)

// validName is NameRule, ^[a-z0-9][a-z0-9._-]{0,62}$, checked by hand:
// every command checks a name, and compiling the regular expression cost
// more than the rest of the check (TestNameAndUserChecksAreTheirPatterns).
func validName(s string) bool {
	return len(s) >= 1 && len(s) <= 63 && s[0] != '.' && s[0] != '_' && s[0] != '-' && allIn(s, lowerNameByte)
}

func lowerNameByte(c byte) bool {
	return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-'
}

// allIn reports whether every byte of s is one ok accepts.
func allIn(s string, ok func(byte) bool) bool {
	for i := 0; i < len(s); i++ {
		if !ok(s[i]) {
			return false
		}
	}
	return true
}

// NameRule says what a project name may be.
const NameRule = "1-63 characters of a-z, 0-9, '.', '_' and '-', starting with a letter or digit"

// ValidateName enforces NameRule.
func ValidateName(name string) error {
	if name == RootOwner {
		return inputErrorf("%q is not a project: it names the root's own inbound tree (%s/), which is no project's; "+
			"a project name is %s", name, area.Base(area.Inbound), NameRule)
	}
	if !validName(name) {
		return inputErrorf("project name %q is invalid: use %s", name, NameRule)
	}
	return nil
}

// ValidateArea checks an area name, as bad input.
func ValidateArea(a string) error {
	if err := area.Check(a, area.All); err != nil {
		return &InputError{Msg: err.Error()}
	}
	return nil
}

// ValidateTree checks that (name, area) can name a tree: a project's tree
// of one of area.OfProject, or the root's inbound tree, named (RootOwner, inbound).
func ValidateTree(name, a string) error {
	if err := ValidateArea(a); err != nil {
		return err
	}
	switch {
	case a == area.Inbound && name == RootOwner:
		return nil
	case a == area.Inbound:
		if err := ValidateName(name); err != nil {
			return err
		}
		return errkind.WithFix(errkind.Input, &InputError{Param: "area", Msg: fmt.Sprintf("project %q has no inbound tree: inbound/ is the root's own tree, named %s in place of a project",
			name, RootOwner)}, errkind.Fix("e.g. %s", errkind.Do(errkind.OpTop, RootOwner, "area", area.Inbound)))
	case name == RootOwner:
		return errkind.WithFieldHint(errkind.Input, &InputError{Param: "area", Msg: fmt.Sprintf("%s owns only the inbound tree, not a %s tree", RootOwner, a)},
			"give %s inbound with it", "area")
	}
	return ValidateName(name)
}

// Manager manages the projects of one sandbox root.
type Manager struct {
	Root    string
	Store   *store.Store
	Backend quota.Backend
	// Unsupported says why the kernel backend could not be used (fallback only).
	Unsupported *quota.UnsupportedError
	backendInfo atomic.Pointer[backendInfo] // BackendInfo's, kept
	Actor       string

	xfs    *xfs.FS
	alloc  *xfs.Allocator
	fsUUID string // key of this root's filesystem in the ID registry
	// identity is the root's identity (the identity leaf); identityFresh: made by
	// this open, not yet written to the root.
	identity      string
	identityFresh bool
	Range         xfs.IDRange
	figs          *usage.Reads // every tree's figures (reads.go)

}

// Options configure Open.
type Options struct {
	Root  string
	Store *store.Store
	// Actor is journalled with every change; default: the OS user.
	Actor string
	// Range of project IDs; default xfs.DefaultRange.
	Range xfs.IDRange
	// ProjectFiles name IDs taken by hand; nil means /etc/projid and /etc/projects.
	ProjectFiles []string
	// FirstInit says the root had no .xfsq/ before this init: trees already
	// under it predate xfsq and are adopted, not a sign of a lost store.
	FirstInit bool
	// Backend is init's choice (auto, xfs, ext4, fallback); "" keeps the one
	// recorded at init (auto when none was).
	Backend string
	// TakeOverHost lets init bind the store's host name to this root while
	// another root holds it (journalled): the other root is gone for good.
	TakeOverHost bool
	// Liveness is how this process's lease is kept; zero: the defaults.
	Liveness store.Liveness

	init bool // Init's open: the binding is journalled as made by init
}

// CheckRoot refuses a directory that xfsq init has not prepared.
func CheckRoot(root string) error {
	if fi, err := os.Stat(filepath.Join(root, StateDir)); err != nil || !fi.IsDir() {
		return errkind.WithFix(errkind.NotReady, fmt.Errorf("%s is not an xfsq sandbox root (no %s/)", root, StateDir),
			errkind.Fix("run %s", errkind.Do(errkind.OpInit, "", "root", root)))
	}
	return nil
}

// checkStoreKnowsRoot refuses a store that has never recorded anything for
// this host while the root holds project trees: a zero-length or newly
// created database, or the wrong --db or --host, would otherwise be used as
// if the root were fresh — every project unknown, the journal empty, IDs
// handed out again.
func checkStoreKnowsRoot(ctx context.Context, root string, st *store.Store) error {
	blank, err := st.Blank(ctx)
	if err != nil || !blank {
		return err
	}
	entries, err := os.ReadDir(filepath.Join(root, area.Base(area.Workspace)))
	if err != nil {
		return nil // no projects/ yet: a fresh root
	}
	var trees []string
	for _, e := range entries {
		if e.IsDir() {
			trees = append(trees, e.Name())
		}
	}
	if len(trees) == 0 {
		return nil
	}
	shown := trees[:min(len(trees), 5)]
	more := ""
	if len(trees) > len(shown) {
		more = fmt.Sprintf(" and %d more", len(trees)-len(shown))
	}
	return errkind.WithFix(errkind.NotReady,
		fmt.Errorf("the store (%s, host %q) has no record of this root, yet %s holds project trees (%s%s): "+
			"it is empty or new, or not this root's store; xfsq changes nothing until then",
			st.Driver(), st.Host, filepath.Join(root, area.Base(area.Workspace)), strings.Join(shown, ", "), more),
		errkind.Fix("restore the database from a backup, or point %s and %s at the store this root was initialised with; "+
			"to adopt the trees into this store instead, move "+fmtLiteral(filepath.Join(root, StateDir))+" aside and run %s",
			errkind.Field("db"), errkind.Field("host"), errkind.Do(errkind.OpInit, "")))
}

// Open detects the backend of an initialised root.
func Open(ctx context.Context, o Options) (*Manager, error) {
	root, err := filepath.Abs(o.Root)
	if err != nil {
		return nil, err
	}
	if err := CheckRoot(root); err != nil {
		return nil, err
	}
	id, err := identity.Read(filepath.Join(root, StateDir))
	if err != nil {
		return nil, err
	}
	// Another host's root, or another root under this host name, is told
	// as such, before the store is judged by what it holds for the name.
	if _, err := identity.Check(ctx, o.Store, root, id, "", o.TakeOverHost); err != nil {
		return nil, err
	}
	if !o.FirstInit {
		if err := checkStoreKnowsRoot(ctx, root, o.Store); err != nil {
			return nil, err
		}
	}
	m := &Manager{Root: root, Store: o.Store, Actor: o.Actor, Range: o.Range, identity: id}
	if m.identity == "" {
		m.identity, m.identityFresh = identity.New(), true
	}
	if m.Actor == "" {
		m.Actor = DefaultActor()
	}
	if m.Range == (xfs.IDRange{}) {
		m.Range = xfs.DefaultRange
	}
	if err := m.Range.Validate(); err != nil {
		return nil, &InputError{Msg: err.Error()}
	}
	choice := o.Backend
	if choice == "" {
		if choice, err = readBackendChoice(root); err != nil {
			return nil, err
		}
	} else if err := ValidateBackend(choice); err != nil {
		return nil, err
	}
	var fs *xfs.FS
	if choice == BackendFallback {
		err = &quota.UnsupportedError{Path: root, Short: "chosen at init",
			Reason: "the root was initialised for application-level quotas (backend fallback); the kernel enforces nothing",
			Fix:    "initialising the root again with backend auto (or xfs, or ext4) uses the kernel's project quotas"}
	} else {
		fs, err = xfs.Open(root)
	}
	if err == nil && (choice == BackendXFS || choice == BackendExt4) && fs.Name() != choice {
		// Asked for by name: the kernel enforces here, but on another filesystem.
		found := fs.Name()
		fs.Close()
		return nil, errkind.WithFix(errkind.NotReady,
			fmt.Errorf("the root was initialised for the %s backend, but %s is on %s", choice, root, found),
			errkind.Fix("run %s (or auto) to use the kernel's "+found+" project quotas", errkind.Do(errkind.OpInit, "", "backend", found)))
	}
	var unsupported *quota.UnsupportedError
	if (choice == BackendXFS || choice == BackendExt4) && errors.As(err, &unsupported) {
		// Asked for by name: never a silent fallback.
		return nil, errkind.WithFix(errkind.NotReady,
			fmt.Errorf("the root was initialised for the %s backend, but %s: %s", choice, unsupported.Path, unsupported.Reason),
			errkind.Fix(fmtLiteral(unsupported.Fix)+"; or run %s to accept application-level quotas", errkind.Do(errkind.OpInit, "", "backend", BackendFallback)))
	}
	switch {
	case err == nil:
		m.xfs, m.Backend = fs, fs
		if m.fsUUID, err = fs.UUID(); err != nil {
			return nil, err
		}
		m.alloc = &xfs.Allocator{FS: fs, Range: m.Range, ProjectFiles: o.ProjectFiles}
	case errors.As(err, &unsupported):
		// The store is the authority on trees and limits, and other
		// processes change it: the backend reads it at each call.
		m.Backend = fallback.New(unsupported.Short, m.recordedTrees, m.recordedTree)
		m.Unsupported = unsupported
		m.fsUUID = "fallback:" + m.identity
	default:
		return nil, err
	}
	m.figs = usage.New(m, m.Store, m.xfs, m.Backend)
	if err := m.openLiveness(ctx, o); err != nil {
		m.Close()
		return nil, err
	}
	why := "open"
	if o.init {
		why = "init"
	}
	if err := m.bindRoot(ctx, why, o.TakeOverHost); err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

// recordedTrees is every tree of this host the store records, for the
// fallback backend. quota.Backend's calls carry no context; a query of the
// store is short.
func (m *Manager) recordedTrees() (map[quota.ProjectID]fallback.Tree, error) {
	trees, err := m.Store.Trees(context.Background(), "")
	if err != nil {
		return nil, err
	}
	out := make(map[quota.ProjectID]fallback.Tree, len(trees))
	for _, t := range trees {
		out[t.ProjectID] = fallback.Tree{Dir: m.abs(t.Path), Limits: t.Limits}
	}
	return out, nil
}

// recordedTree is the tree of this host the store records with id, for
// the fallback backend's calls about one tree: each add asks it, and
// reading every tree instead made adding the 1,000th project read 3,000.
func (m *Manager) recordedTree(id quota.ProjectID) (fallback.Tree, bool, error) {
	t, ok, err := m.Store.TreeByID(context.Background(), id)
	if !ok || err != nil {
		return fallback.Tree{}, false, err
	}
	return fallback.Tree{Dir: m.abs(t.Path), Limits: t.Limits}, true, nil
}

// Close releases the backend's resources.
func (m *Manager) Close() error {
	if m.xfs != nil {
		return m.xfs.Close()
	}
	return nil
}

// BackendName is what every output shows: "xfs", "ext4" or "fallback (REASON)".
func (m *Manager) BackendName() string { return m.Backend.Name() }

// BackendInfo is the backend in force, as an object.
func (m *Manager) BackendInfo() Backend {
	// Every answer carries it, and the reason is formatted: kept while
	// what it is made of stands (tests swap the backend).
	if c := m.backendInfo.Load(); c != nil && c.backend == m.Backend && c.unsupported == m.Unsupported {
		return c.info
	}
	b := m.makeBackendInfo()
	m.backendInfo.Store(&backendInfo{backend: m.Backend, unsupported: m.Unsupported, info: b})
	return b
}

type backendInfo struct {
	backend     quota.Backend
	unsupported *quota.UnsupportedError
	info        Backend
}

func (m *Manager) makeBackendInfo() Backend {
	kind, reason := BackendXFS, ""
	if m.xfs != nil {
		kind = m.xfs.Name()
	} else {
		kind = BackendFallback
		if m.Unsupported != nil {
			reason = m.Unsupported.Error()
		}
	}
	return Backend{Kind: kind, Enforced: m.xfs != nil, Reason: reason}
}

// backendFile records the backend init was told to use (absent: auto), so
// that every later command keeps to it: a root initialised with --backend
// xfs fails loudly when its XFS quotas are gone (a mount without prjquota)
// instead of falling back without a word.
const backendFile = "backend"

func readBackendChoice(root string) (string, error) {
	data, err := os.ReadFile(filepath.Join(root, StateDir, backendFile))
	if errors.Is(err, os.ErrNotExist) {
		return BackendAuto, nil
	}
	if err != nil {
		return "", err
	}
	choice := strings.TrimSpace(string(data))
	if err := ValidateBackend(choice); err != nil {
		return "", errkind.WithFix(errkind.NotReady, fmt.Errorf("%s: %w", filepath.Join(root, StateDir, backendFile), err),
			errkind.Fix("run %s again", errkind.Do(errkind.OpInit, "", "backend", "auto|xfs|ext4|fallback")))
	}
	return choice, nil
}

// ValidateBackend checks a backend choice.
func ValidateBackend(choice string) error {
	switch choice {
	case BackendAuto, BackendXFS, BackendExt4, BackendFallback:
		return nil
	}
	return fieldErrorf("backend", "%q: use auto (the kernel's project quotas where it enforces them on XFS or ext4, else the fallback), xfs, ext4 or fallback", choice)
}

func writeBackendChoice(root, choice string) error {
	p := filepath.Join(root, StateDir, backendFile)
	if choice == BackendAuto {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, []byte(choice+"\n"), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}

// IsXFS reports whether the kernel enforces limits on this root (on XFS
// or ext4: both through the one kernel backend).
func (m *Manager) IsXFS() bool { return m.xfs != nil }

func (m *Manager) abs(rel string) string { return filepath.Join(m.Root, rel) }

// DefaultActor is the OS user, with the sudo caller when there is one.
func DefaultActor() string {
	name := "unknown"
	if u, err := user.Current(); err == nil {
		name = actorName(u.Username)
	}
	if s := os.Getenv("SUDO_USER"); s != "" && s != name {
		name = actorName(s) + " (sudo as " + name + ")"
	}
	return name
}

// plainUser is a user name as useradd makes one,
// ^[A-Za-z0-9._][A-Za-z0-9._-]{0,31}\$?$, checked by hand: every command
// names its actor (see validName).
func plainUser(s string) bool {
	s = strings.TrimSuffix(s, "$")
	return len(s) >= 1 && len(s) <= 32 && s[0] != '-' && allIn(s, userByte)
}

func userByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-'
}

// actorName is a user name fit for the journal. SUDO_USER is whatever the
// caller's environment says: a newline in it would forge event lines in
// every text view of the journal, so anything but a plain user name is
// journalled quoted, in ASCII, and bounded.
func actorName(s string) string {
	if plainUser(s) {
		return s
	}
	if len(s) > 64 {
		s = s[:64]
	}
	return strconv.QuoteToASCII(s)
}

// InitResult is what init found and made.
type InitResult struct {
	Root    string   `json:"root"`
	Backend Backend  `json:"backend"`
	Store   string   `json:"store"`
	Created []string `json:"created"`
	// Notes are what an operator must know about the backend in force,
	// e.g. that on ext4 a writer holding CAP_SYS_RESOURCE bypasses limits.
	Notes []string `json:"notes,omitempty"`
}

// Init creates the root's layout; it is idempotent. The store must already
// be open (opening migrates it).
func Init(ctx context.Context, o Options) (*Manager, InitResult, error) {
	root, err := filepath.Abs(o.Root)
	if err != nil {
		return nil, InitResult{}, err
	}
	res := InitResult{Root: root, Store: o.Store.Driver(), Created: []string{}}
	if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
		return nil, res, fmt.Errorf("sandbox root %s does not exist or is not a directory: create or mount it first (scripts/loopback-xfs.sh makes an XFS one)", root)
	}
	// Before anything is made: a root refused its host name keeps no trace.
	id, err := identity.Read(filepath.Join(root, StateDir))
	if err != nil {
		return nil, res, err
	}
	if _, err := identity.Check(ctx, o.Store, root, id, "", o.TakeOverHost); err != nil {
		return nil, res, err
	}
	o.init = true
	adopted := []string{}
	if entries, err := os.ReadDir(filepath.Join(root, area.Base(area.Workspace))); err == nil && o.FirstInit {
		for _, e := range entries {
			if e.IsDir() {
				adopted = append(adopted, e.Name())
			}
		}
	}
	for _, d := range append(area.Bases, StateDir) {
		p := filepath.Join(root, d)
		mode := os.FileMode(0o755)
		if d == StateDir {
			mode = 0o700
		}
		if err := os.Mkdir(p, mode); err == nil {
			res.Created = append(res.Created, d)
		} else if !errors.Is(err, os.ErrExist) {
			return nil, res, fmt.Errorf("create %s: %w", p, err)
		}
	}
	// Asked before Open, which journals the root's binding.
	blank, err := o.Store.Blank(ctx)
	if err != nil {
		return nil, res, err
	}
	m, err := Open(ctx, o)
	if err != nil {
		return nil, res, err
	}
	// The store's first record of this root: from now on it is not blank,
	// and a blank store on this root is a lost or wrong one.
	if blank {
		err = o.Store.InTx(ctx, func(tx *store.Tx) error {
			return tx.AppendEvent(ctx, "", m.actor(ctx), journal.RootInitialised{Root: root, Adopted: adopted})
		})
		if err != nil {
			m.Close()
			return nil, res, err
		}
	}
	if o.Backend != "" {
		if err := writeBackendChoice(root, o.Backend); err != nil {
			m.Close()
			return nil, res, fmt.Errorf("record the backend choice: %w", err)
		}
	}
	res.Backend = m.BackendInfo()
	if m.xfs != nil && m.xfs.Kind() == xfs.KindExt4 {
		res.Notes = append(res.Notes, xfs.BypassNote)
	}
	if m.xfs != nil {
		// A parent's PROJINHERIT would stamp its ID on every new tree.
		// inbound/ is a tree of its own: its ID and PROJINHERIT stay.
		for _, d := range append([]string{""}, area.Bases...) {
			if d == area.Base(area.Inbound) {
				continue
			}
			if err := m.xfs.ClearInherit(filepath.Join(root, d)); err != nil {
				m.Close()
				return nil, res, err
			}
		}
		if err := m.applyGrace(ctx); err != nil {
			m.Close()
			return nil, res, err
		}
	}
	if err := m.ensureInboundTree(ctx); err != nil {
		m.Close()
		return nil, res, fmt.Errorf("make the inbound tree: %w", err)
	}
	return m, res, nil
}

// applyGrace gives the kernel the soft_grace setting as the filesystem's
// grace periods for bytes and inodes (XFS and ext4 keep one pair per filesystem).
func (m *Manager) applyGrace(ctx context.Context) error {
	if m.xfs == nil {
		return nil
	}
	g, err := m.setting(ctx, "soft_grace")
	if err != nil {
		return err
	}
	return m.xfs.SetGrace(g.Duration(), g.Duration())
}

// setting resolves one setting's effective value.
func (m *Manager) setting(ctx context.Context, key string) (settings.Value, error) {
	s, err := settings.Lookup(key)
	if err != nil {
		return settings.Value{}, err
	}
	stored, ok, err := m.Store.Setting(ctx, key)
	if err != nil {
		return settings.Value{}, err
	}
	v, err := settings.Resolve(s, stored, ok)
	if err != nil {
		return v, errkind.New(errkind.Input, err) // a bad environment value
	}
	return v, nil
}

// settingsOf resolves the settings of keys from one read of the store,
// each as setting would.
func (m *Manager) settingsOf(ctx context.Context, keys ...string) (map[string]settings.Value, error) {
	stored, err := m.Store.Settings(ctx)
	if err != nil {
		return nil, err
	}
	return StoredSettings(stored).Of(keys...)
}

// StoredSettings are a host's stored settings as one read returned them
// (store.Store.Settings, or store.Tx.LockAdd, which reads them with an
// add's locks).
type StoredSettings map[string]string

// Of resolves the settings of keys, each as setting would.
func (stored StoredSettings) Of(keys ...string) (map[string]settings.Value, error) {
	out := make(map[string]settings.Value, len(keys))
	for _, key := range keys {
		s, err := settings.Lookup(key)
		if err != nil {
			return nil, err
		}
		v, isStored := stored[key]
		if out[key], err = settings.Resolve(s, v, isStored); err != nil {
			return nil, errkind.New(errkind.Input, err) // a bad environment value
		}
	}
	return out, nil
}

// WriteSettings are the settings a write through the files layer obeys
// (files.WriteSettings).
type WriteSettings = files.WriteSettings

// WriteSettings reads max_file_bytes, root_budget, reservation_ttl and
// soft_grace in one read of the store: a write request pays for one query,
// not four.
func (m *Manager) WriteSettings(ctx context.Context) (WriteSettings, error) {
	v, err := m.settingsOf(ctx, "max_file_bytes", "root_budget", "reservation_ttl", "soft_grace")
	if err != nil {
		return WriteSettings{}, err
	}
	return WriteSettings{MaxFileBytes: v["max_file_bytes"].Bytes(), RootBudget: v["root_budget"].Bytes(),
		TTL: v["reservation_ttl"].Duration(), SoftGrace: v["soft_grace"].Duration()}, nil
}

func (m *Manager) now() time.Time { return time.Now() }

// Tree is one registered tree of a project: its area, path, project ID and
// backend, as the store records it. Shells see it through here, never
// through the store.
type Tree = store.Tree

// Tree returns the tree of a ready project.
func (m *Manager) Tree(ctx context.Context, name, a string) (store.Tree, error) {
	if a == "" {
		a = area.Workspace
	}
	if err := ValidateTree(name, a); err != nil {
		return store.Tree{}, err
	}
	p, err := m.Store.Project(ctx, name)
	if errors.Is(err, store.ErrNotFound) && name == RootOwner {
		return store.Tree{}, errNoInboundTree()
	}
	if errors.Is(err, store.ErrNotFound) {
		return store.Tree{}, notFound(name)
	}
	if err != nil {
		return store.Tree{}, err
	}
	if p.State != store.StateReady {
		return store.Tree{}, notReady(name, p.State, errkind.Fix("run %s first", errkind.Do(errkind.OpDoctor, "", "fix", "")))
	}
	trees, err := m.Store.Trees(ctx, name)
	if err != nil {
		return store.Tree{}, err
	}
	for _, t := range trees {
		if t.Area == a {
			return t, nil
		}
	}
	if name == RootOwner {
		return store.Tree{}, errNoInboundTree()
	}
	return store.Tree{}, errkind.WithFix(errkind.Internal, fmt.Errorf("project %q has no %s tree", name, a), runDoctor)
}

// errNoInboundTree is a root initialised before inbound/ was a tree.
func errNoInboundTree() error {
	return errkind.WithFix(errkind.NotReady,
		fmt.Errorf("the root has no inbound tree (initialised before xfsq gave %s/ a project ID and limits)", area.Base(area.Inbound)), doctorFix)
}

// baselineMaxAge is how old the fallback's last walk of a tree may be
// before a write through xfsq walks it again: writes made outside xfsq are
// seen only then.
const baselineMaxAge = SnapshotInterval

// RefreshBaselineIfStale walks a fallback tree whose last walk is older than
// baselineMaxAge, so admission starts from what is on disk.
func (m *Manager) RefreshBaselineIfStale(ctx context.Context, t store.Tree) error {
	if m.xfs != nil {
		return nil
	}
	_, err := m.baseline(ctx, t, baselineMaxAge)
	return err
}

// fallbackQuota reads a fallback tree as admission sees it (its last walk,
// plus the ledger and reservations since) and when that walk began. A walk
// maxAge old or older, or none, is made again first.
func (m *Manager) fallbackQuota(ctx context.Context, t store.Tree, maxAge time.Duration) (quota.Quota, time.Time, error) {
	walked, err := m.baseline(ctx, t, maxAge)
	if err != nil {
		return quota.Quota{}, walked, err
	}
	// Read, not Account: the root's total, which only a write needs, sums
	// every tree, and a pass reads every tree (a sweep of 1,000 projects
	// spent 60% of its CPU summing the root 3,000 times over).
	r, err := m.Store.Read(ctx, store.TreeKey{Project: t.Project, Area: t.Area})
	return quota.Quota{ID: t.ProjectID, Limits: r.Limits, Usage: r.Used}, walked.UTC(), err
}

// baseline returns when the fallback tree's last walk began, walking it
// again first (and recording the walk as its baseline) when that is maxAge
// ago or more, or never (maxAge 0: always).
func (m *Manager) baseline(ctx context.Context, t store.Tree, maxAge time.Duration) (time.Time, error) {
	key := store.TreeKey{Project: t.Project, Area: t.Area}
	var walked time.Time
	if maxAge > 0 || m.Store.ReadOnly() { // else it walks whenever it last did
		last, err := m.Store.Baseline(ctx, key)
		walked = last.At
		if err != nil || (!walked.IsZero() && m.now().Sub(walked) < maxAge) {
			return walked, err
		}
	}
	if m.Store.ReadOnly() {
		return walked, nil // a full disk: report what the store has, and says when it was walked
	}
	start := m.now().Truncate(time.Microsecond) // as the store keeps it
	walk, err := m.Store.BeginWalk(ctx, key, start)
	if err != nil {
		return walked, err
	}
	u, seen, err := m.measureTree(t, inProgress(walk))
	if err != nil {
		return walked, err
	}
	return start, m.Store.SetBaseline(ctx, key, u, walk, seen)
}
