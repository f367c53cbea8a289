package xfs

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xfsq/xfsq/internal/atomicfile"
	"github.com/xfsq/xfsq/quota"
)

// IDRange is the inclusive range IDs are allocated from.
type IDRange struct{ First, Last quota.ProjectID }

// DefaultRange keeps clear of the small IDs people pick by hand in
// /etc/projid and of the top bit, which some tools read as a sign.
var DefaultRange = IDRange{First: 100000, Last: 1<<31 - 1}

// Validate refuses ranges that include 0 or 0xFFFFFFFF, or are empty.
func (r IDRange) Validate() error {
	switch {
	case r.First == 0:
		return errors.New("project ID range must not include 0: XFS never enforces ID 0")
	case r.Last == ^quota.ProjectID(0):
		return errors.New("project ID range must not include 4294967295 (-1, the kernel's invalid ID)")
	case r.First > r.Last:
		return fmt.Errorf("project ID range %d-%d is empty", r.First, r.Last)
	}
	return nil
}

// Registry persists which IDs xfsq handed out on each filesystem. It is the
// seam through which the store takes over allocation: Reserve must be atomic
// against every other Reserve for the same filesystem, in any process.
type Registry interface {
	// Reserve records and returns the lowest ID in r that is neither recorded
	// for the filesystem fsUUID nor in excluded.
	Reserve(fsUUID string, r IDRange, excluded map[quota.ProjectID]bool, owner string) (quota.ProjectID, error)
	// Release forgets id on fsUUID; releasing an unknown ID succeeds.
	Release(fsUUID string, id quota.ProjectID) error
}

// inodegcDrain bounds how long Release waits for deleted inodes to leave the
// kernel's usage counters.
const inodegcDrain = 3 * time.Second

// Allocator hands out project IDs that can never collide: not in use on the
// filesystem (any usage or limits), not named in /etc/projid or
// /etc/projects, not recorded in the Registry.
type Allocator struct {
	FS       *FS
	Registry Registry
	Range    IDRange
	// ProjectFiles are read for IDs named by hand; nil means /etc/projid and /etc/projects.
	ProjectFiles []string
}

// Allocate reserves a fresh ID for owner (a name kept with the record).
func (a *Allocator) Allocate(owner string) (quota.ProjectID, error) {
	if err := a.Range.Validate(); err != nil {
		return 0, err
	}
	uuid, err := a.FS.UUID()
	if err != nil {
		return 0, err
	}
	excluded, err := a.Excluded()
	if err != nil {
		return 0, err
	}
	return a.Registry.Reserve(uuid, a.Range, excluded, owner)
}

// Release returns id to the pool once the kernel shows it owns nothing.
func (a *Allocator) Release(id quota.ProjectID) error {
	q, err := a.FS.WaitEmpty(id, inodegcDrain)
	if err != nil {
		return err
	}
	if q.OwnsData() {
		return &quota.OpError{Op: "release", Tree: a.FS.MountPoint(), ID: id,
			Err: fmt.Errorf("%w: %d bytes in %d inodes still carry the ID; delete or re-assign them first",
				quota.ErrInUse, q.Usage.Bytes, q.Usage.Inodes)}
	}
	uuid, err := a.FS.UUID()
	if err != nil {
		return err
	}
	return a.Registry.Release(uuid, id)
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

// Excluded is every ID Allocate must skip besides the registry's own:
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

// LockFileRegistry keeps ID records in a text file ("uuid id owner" lines),
// serialised across processes by flock(2) on a sibling lock file. It is the
// registry until the store takes over; the store implements Registry too.
type LockFileRegistry struct{ Path string }

func (r LockFileRegistry) locked(fn func(records []idRecord) ([]idRecord, error)) error {
	if err := os.MkdirAll(filepath.Dir(r.Path), 0o700); err != nil {
		return err
	}
	lock, err := os.OpenFile(r.Path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		return fmt.Errorf("lock %s: %w", lock.Name(), err)
	}
	records, err := readRecords(r.Path)
	if err != nil {
		return err
	}
	updated, err := fn(records)
	if err != nil || updated == nil {
		return err
	}
	return writeRecords(r.Path, updated)
}

type idRecord struct {
	fs    string
	id    quota.ProjectID
	owner string
}

// Reserve implements Registry.
func (r LockFileRegistry) Reserve(fsUUID string, rng IDRange, excluded map[quota.ProjectID]bool, owner string) (quota.ProjectID, error) {
	var got quota.ProjectID
	err := r.locked(func(records []idRecord) ([]idRecord, error) {
		taken := make(map[quota.ProjectID]bool, len(records))
		for _, rec := range records {
			if rec.fs == fsUUID {
				taken[rec.id] = true
			}
		}
		for id := rng.First; ; id++ {
			if !taken[id] && !excluded[id] {
				got = id
				return append(records, idRecord{fsUUID, id, owner}), nil
			}
			if id == rng.Last {
				return nil, fmt.Errorf("no free project ID left in %d-%d on filesystem %s", rng.First, rng.Last, fsUUID)
			}
		}
	})
	return got, err
}

// Release implements Registry.
func (r LockFileRegistry) Release(fsUUID string, id quota.ProjectID) error {
	return r.locked(func(records []idRecord) ([]idRecord, error) {
		kept := records[:0]
		for _, rec := range records {
			if rec.fs != fsUUID || rec.id != id {
				kept = append(kept, rec)
			}
		}
		return kept, nil
	})
}

func readRecords(path string) ([]idRecord, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []idRecord
	for n, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if len(fields) < 2 {
			return nil, fmt.Errorf("%s:%d: want \"uuid id [owner]\", got %q", path, n+1, line)
		}
		id, err := strconv.ParseUint(fields[1], 10, 32)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: bad project ID %q", path, n+1, fields[1])
		}
		rec := idRecord{fs: fields[0], id: quota.ProjectID(id)}
		if len(fields) > 2 {
			rec.owner = fields[2]
		}
		out = append(out, rec)
	}
	return out, nil
}

// writeRecords replaces the file atomically.
func writeRecords(path string, records []idRecord) error {
	var b strings.Builder
	for _, rec := range records {
		// Fields are space-separated: an owner with spaces would shift them.
		fmt.Fprintf(&b, "%s %d %s\n", rec.fs, rec.id, strings.Join(strings.Fields(rec.owner), "_"))
	}
	return atomicfile.WriteFile(path, []byte(b.String()), 0o600)
}
