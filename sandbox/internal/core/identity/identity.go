// Package identity is how a root is bound to its host name: the root's
// identity, a random id kept in .xfsq/root-id, and its filesystem's,
// recorded in the store under the host name at init. A command on the
// root under another host name, or on another root under this one, is
// refused before it reads or writes anything of that host: rows scoped by
// host describe one disk. It is a leaf beneath the core, which binds a
// root with it (bindRoot) as it opens or initialises one; it reads the
// store's bindings and writes only the identity file, in the state
// directory it is given; the binding itself the core records.
package identity

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/store"
	"golang.org/x/sys/unix"
)

// rootIDFile holds the root's identity in the state directory.
const rootIDFile = "root-id"

// isRootID reports whether id is a version 4 UUID as New writes it,
// ^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$,
// checked by hand: every command reads the root's identity, and compiling
// the regular expression cost more than reading the file
// (TestIsRootIDIsItsPattern).
func isRootID(id string) bool {
	if len(id) != 36 || id[14] != '4' || !strings.ContainsRune("89ab", rune(id[19])) {
		return false
	}
	for i := 0; i < len(id); i++ {
		switch c := id[i]; i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
				return false
			}
		}
	}
	return true
}

// Read is the identity of the root whose state directory is stateDir; ""
// when it has none yet.
func Read(stateDir string) (string, error) {
	p := filepath.Join(stateDir, rootIDFile)
	data, err := readSmall(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", nil
	case errors.Is(err, errNotAFile):
		return "", damaged(p, err.Error())
	case err != nil:
		return "", err
	}
	id := strings.TrimSpace(string(data))
	if !isRootID(id) {
		return "", damaged(p, "it was edited or damaged")
	}
	return id, nil
}

// damaged refuses p, a root-id file that holds no identity, and says why.
func damaged(p, why string) error {
	return errkind.WithFix(errkind.NotReady, fmt.Errorf("%s does not hold a root identity (a UUID): %s", p, why),
		errkind.Fix("restore it from a backup of the root; without one, move it aside and take the host name over with %s", errkind.Do(errkind.OpInit, "", "take_over_host", "")))
}

// errNotAFile: root-id is a link, a FIFO, a device or too long to be an
// identity. Every command reads it first: a FIFO there (opened without
// O_NONBLOCK) or a link to /dev/zero would hang each one for good.
var errNotAFile = errors.New("not a regular file of an identity's size")

// maxIDFile is more than any identity file written (37 bytes) and its
// whitespace.
const maxIDFile = 4096

// special names a file type that is not a regular file or a directory.
func special(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "FIFO"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	}
	return "special file"
}

// readSmall reads p, a regular file of at most maxIDFile bytes, opened
// through no link and without waiting for a writer.
func readSmall(p string) ([]byte, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("it is a symbolic link: %w", errNotAFile)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	switch {
	case err != nil:
		return nil, err
	case st.IsDir():
		return nil, &fs.PathError{Op: "read", Path: p, Err: syscall.EISDIR}
	case !st.Mode().IsRegular():
		return nil, fmt.Errorf("it is a %s: %w", special(st.Mode()), errNotAFile)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxIDFile+1))
	if err == nil && len(data) > maxIDFile {
		return nil, fmt.Errorf("it is over %d bytes: %w", maxIDFile, errNotAFile)
	}
	return data, err
}

// New is a random (version 4) UUID, a root's new identity.
func New() string {
	b := make([]byte, 16)
	rand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// Write records id as the identity of the root whose state directory is
// stateDir, replacing the file whole.
func Write(stateDir, id string) error {
	p := filepath.Join(stateDir, rootIDFile)
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, []byte(id+"\n"), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}

// FS names the filesystem holding root: kernelUUID, the kernel backend's
// UUID ("" on the fallback), else the statfs id (derived from the UUID on
// ext4 and btrfs). "" when neither can be read: it is then not compared.
func FS(root, kernelUUID string) string {
	if kernelUUID != "" {
		return "uuid:" + kernelUUID
	}
	var st unix.Statfs_t
	if err := unix.Statfs(root, &st); err != nil || st.Fsid.Val == [2]int32{} {
		return ""
	}
	return fmt.Sprintf("fsid:%08x%08x", uint32(st.Fsid.Val[0]), uint32(st.Fsid.Val[1]))
}

// Refusal is the refusal of a root under a host name bound otherwise.
func Refusal(root, host, rootID, fsID string, c *store.BindConflict) error {
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

// Check refuses root (identity id, "" for none yet) under the
// store's host name when the name is bound to another root (unless
// takeOver), or the root to another name; bound says the binding is
// already as asked. It reads only: init asks it before making anything.
func Check(ctx context.Context, st *store.Store, root, id, fsID string, takeOver bool) (bound bool, err error) {
	held, mine, heldOK, mineOK, err := st.Bindings(ctx, id)
	if err != nil {
		return false, err
	}
	switch {
	case mineOK && id != "" && mine.Host != st.Host:
		return false, Refusal(root, st.Host, id, fsID, &store.BindConflict{Bound: &mine})
	case heldOK && held.RootID == id && held.Path == root && (held.FSID == fsID || fsID == ""):
		return true, nil
	case heldOK && held.RootID != id && !takeOver:
		return false, Refusal(root, st.Host, id, fsID, &store.BindConflict{Held: &held})
	}
	return false, nil
}
