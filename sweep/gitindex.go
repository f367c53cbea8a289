package sweep

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
)

// TrackedFiles reads the paths git tracks from a repository's index
// (.git/index, versions 2 to 4) inside repo, without a git binary. A
// directory that is not a repository tracks nothing.
func TrackedFiles(repo *os.Root, dir string) (map[string]bool, error) {
	f, err := repo.Open(path.Join(dir, ".git", "index"))
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]bool{}, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	hashLen := 20
	if cfg, err := repo.ReadFile(path.Join(dir, ".git", "config")); err == nil && bytes.Contains(cfg, []byte("objectformat = sha256")) {
		hashLen = 32
	}
	data, err := io.ReadAll(io.LimitReader(f, 1<<30))
	if err != nil {
		return nil, err
	}
	return parseIndex(data, hashLen)
}

// parseIndex decodes the entries of a git index (Documentation/gitformat-index).
func parseIndex(data []byte, hashLen int) (map[string]bool, error) {
	bad := func(what string) error { return fmt.Errorf("git index: %s", what) }
	if len(data) < 12 || string(data[:4]) != "DIRC" {
		return nil, bad("no DIRC signature")
	}
	version := binary.BigEndian.Uint32(data[4:8])
	if version < 2 || version > 4 {
		return nil, bad(fmt.Sprintf("version %d is not 2, 3 or 4", version))
	}
	count := binary.BigEndian.Uint32(data[8:12])
	tracked := make(map[string]bool, min(count, 1<<20))
	off := 12
	var prev []byte
	for range count {
		// ctime, mtime (8 each), dev, ino, mode, uid, gid, size (4 each), the object name, flags.
		fixed := 40 + hashLen + 2
		if off+fixed > len(data) {
			return nil, bad("truncated entry")
		}
		flags := binary.BigEndian.Uint16(data[off+40+hashLen:])
		start := off
		off += fixed
		if flags&0x4000 != 0 { // extended flags (version 3 and later)
			if version < 3 || off+2 > len(data) {
				return nil, bad("extended flags where they cannot be")
			}
			off += 2
		}
		var name []byte
		if version == 4 {
			// The name is the previous one less N trailing bytes, plus a suffix.
			strip, n := offsetVarint(data[off:])
			if n == 0 || strip > uint64(len(prev)) {
				return nil, bad("bad path compression")
			}
			off += n
			end := bytes.IndexByte(data[off:], 0)
			if end < 0 {
				return nil, bad("unterminated path")
			}
			name = append(append([]byte(nil), prev[:uint64(len(prev))-strip]...), data[off:off+end]...)
			off += end + 1
		} else {
			end := bytes.IndexByte(data[off:], 0)
			if end < 0 {
				return nil, bad("unterminated path")
			}
			name = data[off : off+end]
			// Entries are NUL-padded to a multiple of 8 bytes.
			off = start + (off+end-start+8)/8*8
		}
		tracked[string(name)] = true
		prev = name
	}
	return tracked, nil
}

// offsetVarint decodes git's offset encoding (each continuation adds one
// before shifting); n is 0 when it does not fit.
func offsetVarint(b []byte) (v uint64, n int) {
	if len(b) == 0 {
		return 0, 0
	}
	v = uint64(b[0] & 0x7f)
	n = 1
	for b[n-1]&0x80 != 0 {
		if n >= len(b) || n > 9 {
			return 0, 0
		}
		v = (v+1)<<7 | uint64(b[n]&0x7f)
		n++
	}
	return v, n
}
