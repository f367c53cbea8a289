package xfs

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/quota"
)

// IDRange and DefaultRange are quota's: the store allocates IDs and may
// not import a backend.
type IDRange = quota.IDRange

// DefaultRange is quota.DefaultRange.
var DefaultRange = quota.DefaultRange

// Allocator knows which IDs allocation must skip on one filesystem: IDs in
// use there (any usage or limits) and IDs named by hand in /etc/projid or
// /etc/projects. Handing an ID out is the store's (Tx.ReserveID, with
// Excluded): one transaction against every other process, on any host
// sharing the store.
type Allocator struct {
	FS    *FS
	Range IDRange
	// ProjectFiles are read for IDs named by hand; nil means /etc/projid and /etc/projects.
	ProjectFiles []string
}

// WaitEmpty reads id's quota, giving usage up to timeout to drain first.
// XFS frees unlinked inodes in the background (inodegc, Linux 5.14+) and
// userspace can only push that work, not wait for it (statfs pushes), so
// the usage of a just-emptied tree lingers for a moment.
func (fs *FS) WaitEmpty(id quota.ProjectID, timeout time.Duration) (quota.Quota, error) {
	q, err := fs.Get(id)
	for deadline := time.Now().Add(timeout); err == nil && q.OwnsData() && time.Now().Before(deadline); {
		var st unix.Statfs_t
		unix.Fstatfs(int(fs.handle.Fd()), &st)
		time.Sleep(20 * time.Millisecond)
		q, err = fs.Get(id)
	}
	return q, err
}

// Excluded is every ID an allocation must skip besides those the store
// has handed out:
// IDs with usage or limits on the filesystem, and IDs named by hand.
func (a *Allocator) Excluded() (map[quota.ProjectID]bool, error) {
	inUse, err := a.FS.All()
	if err != nil {
		return nil, err
	}
	excluded, err := a.HandNamed()
	if err != nil {
		return nil, err
	}
	for id := range inUse {
		excluded[id] = true
	}
	return excluded, nil
}

// HandNamed is the set of IDs named in the project files (/etc/projid and
// /etc/projects unless ProjectFiles says otherwise).
func (a *Allocator) HandNamed() (map[quota.ProjectID]bool, error) {
	files := a.ProjectFiles
	if files == nil {
		files = []string{"/etc/projid", "/etc/projects"}
	}
	named := map[quota.ProjectID]bool{}
	for _, f := range files {
		ids, err := ReadProjectFileIDs(f)
		if err != nil {
			return nil, err
		}
		for _, id := range ids {
			named[id] = true
		}
	}
	return named, nil
}

// ReadProjectFileIDs returns the IDs named in an /etc/projid ("name:id") or
// /etc/projects ("id:path") file; a missing file names none. The file kind
// is told by the name: a base name of "projects" means id first.
func ReadProjectFileIDs(path string) ([]quota.ProjectID, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	idFirst := filepath.Base(path) == "projects"
	var ids []quota.ProjectID
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		left, right, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		field := right
		if idFirst {
			field = left
		}
		// A name the kernel tools cannot parse is not ours to reserve.
		if v, err := strconv.ParseUint(strings.TrimSpace(field), 10, 32); err == nil {
			ids = append(ids, quota.ProjectID(v))
		}
	}
	return ids, sc.Err()
}
