package core

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/store"
	"golang.org/x/sys/unix"
)

// A root is bound to its host name: its identity, a random id kept in
// .xfsq/root-id, and its filesystem's, recorded in the store under the
// host name at init. A command on the root under another host name, or on
// another root under this one, is refused before it reads or writes
// anything of that host: rows scoped by host describe one disk.

// rootIDFile holds the root's identity under StateDir.
const rootIDFile = "root-id"

// Compiled on first use (see lifecycle's runPattern).
var rootIDPattern = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
})

// readRootID is the root's identity; "" when it has none yet.
func readRootID(root string) (string, error) {
	p := filepath.Join(root, StateDir, rootIDFile)
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	id := strings.TrimSpace(string(data))
	if !rootIDPattern().MatchString(id) {
		return "", errkind.WithFix(errkind.NotReady, fmt.Errorf("%s does not hold a root identity (a UUID): it was edited or damaged", p),
			errkind.Fix("restore it from a backup of the root; without one, move it aside and take the host name over with %s", errkind.Do(errkind.OpInit, "", "take_over_host", "")))
	}
	return id, nil
}

// newRootID is a random (version 4) UUID.
func newRootID() string {
	b := make([]byte, 16)
	rand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func writeRootID(root, id string) error {
	p := filepath.Join(root, StateDir, rootIDFile)
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, []byte(id+"\n"), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}

// fsIdentity names the filesystem holding the root: the kernel backend's
// UUID, else the statfs id (derived from the UUID on ext4 and btrfs). ""
// when neither can be read: it is then not compared.
func (m *Manager) fsIdentity() string {
	if m.xfs != nil && m.fsUUID != "" {
		return "uuid:" + m.fsUUID
	}
	var st unix.Statfs_t
	if err := unix.Statfs(m.Root, &st); err != nil || st.Fsid.Val == [2]int32{} {
		return ""
	}
	return fmt.Sprintf("fsid:%08x%08x", uint32(st.Fsid.Val[0]), uint32(st.Fsid.Val[1]))
}

// bindingError is the refusal of a root under a host name bound otherwise.
func bindingError(root, host, rootID, fsID string, c *store.BindConflict) error {
	if b := c.Bound; b != nil {
		return errkind.WithFieldHint(errkind.Conflict,
			fmt.Errorf("the root %s is bound to host %q (since %s), not to host %q: another host's records are not this root's",
				root, b.Host, b.BoundAt.Format("2006-01-02"), host),
			"name this root's own host: %s "+fmtLiteral(b.Host), "host")
	}
	h := c.Held
	if h.RootID == rootID {
		return errkind.WithFix(errkind.Conflict,
			fmt.Errorf("host %q is bound to this root's identity on another filesystem (bound on %s, now on %s): the root was copied or restored elsewhere",
				host, h.FSID, fsID),
			errkind.Fix("if this copy replaces the original for good, %s binds the host name to it (journalled)", errkind.Do(errkind.OpInit, "", "take_over_host", "")))
	}
	return errkind.WithFix(errkind.Conflict,
		fmt.Errorf("host %q is bound to another root (%s, identity %s): this root (%s) may not act under its name",
			host, h.Path, h.RootID, root),
		errkind.Fix("give this root a host name of its own (%s); if "+fmtLiteral(h.Path)+" is gone for good, %s gives its name to this root (journalled)",
			errkind.Field("host"), errkind.Do(errkind.OpInit, "", "take_over_host", "")))
}

// fmtLiteral is s inside a format string.
func fmtLiteral(s string) string { return strings.ReplaceAll(s, "%", "%%") }

// checkBinding refuses root (identity id, "" for none yet) under the
// store's host name when the name is bound to another root (unless
// takeOver), or the root to another name; bound says the binding is
// already as asked. It reads only: init asks it before making anything.
func checkBinding(ctx context.Context, st *store.Store, root, id, fsID string, takeOver bool) (bound bool, err error) {
	held, mine, heldOK, mineOK, err := st.Bindings(ctx, id)
	if err != nil {
		return false, err
	}
	switch {
	case mineOK && id != "" && mine.Host != st.Host:
		return false, bindingError(root, st.Host, id, fsID, &store.BindConflict{Bound: &mine})
	case heldOK && held.RootID == id && held.Path == root && (held.FSID == fsID || fsID == ""):
		return true, nil
	case heldOK && held.RootID != id && !takeOver:
		return false, bindingError(root, st.Host, id, fsID, &store.BindConflict{Held: &held})
	}
	return false, nil
}

// bindRoot checks that the store's host name is bound to this root, binding
// it when it is not yet (at init; on the first open of a root of an older
// xfsq, which also gives the root its identity), or taking it over when
// asked. A read-only store is only checked. Nothing is written when the
// binding is refused.
func (m *Manager) bindRoot(ctx context.Context, why string, takeOver bool) error {
	fsID := m.fsIdentity()
	bound, err := checkBinding(ctx, m.Store, m.Root, m.identity, fsID, takeOver)
	if err != nil || bound || m.Store.ReadOnly() {
		return err // a read-only store: checked as far as it can be, bound at the next writable open
	}
	if m.identityFresh {
		if err := writeRootID(m.Root, m.identity); err != nil {
			return fmt.Errorf("record the root's identity: %w", err)
		}
		m.identityFresh = false
	}
	if why != "init" {
		why = "upgrade"
	}
	var fallbackKey string
	if m.xfs == nil {
		fallbackKey = m.fsUUID
	}
	err = m.Store.Bind(ctx, store.RootBinding{RootID: m.identity, FSID: fsID, Path: m.Root}, why, m.actor(ctx), fallbackKey, takeOver)
	var c *store.BindConflict
	if errors.As(err, &c) {
		return bindingError(m.Root, m.Store.Host, m.identity, fsID, c)
	}
	return err
}

// RootID is the root's identity (see bindRoot).
func (m *Manager) RootID() string { return m.identity }
