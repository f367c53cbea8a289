package gitindex

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"
	"math/bits"
	"slices"
	"strings"
)

// An index is read from a tenant's tree, so every size in it is hostile:
// nothing is allocated from a count the file claims, only from bytes read.
const (
	// maxIndexBytes bounds an index (and a shared index) read at all: far
	// above what real repositories write (a 400k-file checkout is ~50 MiB),
	// far below what would exhaust a host shared by many tenants. A larger
	// one protects its whole repository instead.
	maxIndexBytes = 128 << 20
	// maxLinkBytes bounds the split index's bitmaps, read into memory: two
	// bits per shared entry, compressed, for the largest index allowed.
	maxLinkBytes = 4 << 20
	// minEntryBytes is the smallest entry any version writes (v4, empty
	// suffix): it caps how many entries a file of a given size can hold.
	minEntryBytes = 40 + 20 + 2 + 2
)

// Index is what a repository's index says is tracked, as paths
// relative to the repository's root.
type Index struct {
	files    []string        // sorted: every entry (files, symlinks, gitlinks)
	gitlinks map[string]bool // submodules: the whole directory is the superproject's
	sparse   map[string]bool // sparse directories (no trailing slash): all of it is tracked
}

// Tracks reports whether the index has an entry at p (a file, a symlink
// or a gitlink).
func (ix *Index) Tracks(p string) bool {
	_, ok := slices.BinarySearch(ix.files, p)
	return ok
}

// Gitlink reports whether p is a submodule: the whole directory is the
// superproject's.
func (ix *Index) Gitlink(p string) bool { return ix.gitlinks[p] }

// Sparse reports whether p is a sparse directory: all of it is tracked.
func (ix *Index) Sparse(p string) bool { return ix.sparse[p] }

// Covers reports whether deleting p (a path in the repository) would
// delete something the index tracks: p itself, a file below it, or a
// sparse directory it is in or holds.
func (ix *Index) Covers(p string) bool {
	if ix.Tracks(p) {
		return true
	}
	// Below p: the names starting p/ sort together, from p/ on.
	if i, _ := slices.BinarySearch(ix.files, p+"/"); i < len(ix.files) && strings.HasPrefix(ix.files[i], p+"/") {
		return true
	}
	for s := range ix.sparse {
		if s == p || strings.HasPrefix(p, s+"/") || strings.HasPrefix(s, p+"/") {
			return true
		}
	}
	return false
}

// indexEntry is one entry as the file holds it.
type indexEntry struct {
	name string
	mode uint32
}

// indexFile is one index file as read: a split index's entries still
// need the shared index's.
type indexFile struct {
	cached   *Index // read before in this very version (Finder.indexes)
	entries  []indexEntry
	sum      []byte // the trailing checksum: a shared index is named by it
	linked   bool   // it has a link extension (split index)
	base     []byte // the shared index's object name; all zeros: none
	del, rep []uint64
	ieot     []ieotBlock // the IEOT extension's blocks, when there is one
	decoded  int64       // the bytes of all its paths, as read
	eoieAt   int64       // where its EOIE extension is, 0 when it has none
}

// tailWriter keeps the last keep bytes written to it.
type tailWriter struct {
	keep int
	b    []byte
}

func (t *tailWriter) Write(p []byte) (int, error) {
	if len(p) >= t.keep {
		t.b = append(t.b[:0], p[len(p)-t.keep:]...)
	} else {
		t.b = append(t.b, p...)
		if over := len(t.b) - t.keep; over > 0 {
			t.b = append(t.b[:0], t.b[over:]...)
		}
	}
	return len(p), nil
}

// maxPathBytes bounds one path read from an index: the kernel's PATH_MAX.
// A version 4 index stores each path as a suffix to the one before, so a
// file of a few megabytes can name paths of gigabytes in all (an attack's
// 2.6 MB index took a sweep to 1.2 GB): the paths read are bounded too, in
// all to maxDecodedBytes and to a multiple of the file.
const (
	maxPathBytes    = 4096
	maxDecodedBytes = 256 << 20
	maxDecodedRatio = 8
)

// ieotBlock is one block of the IEOT extension: where its first entry is
// in the file and how many entries it holds. A reader that loads blocks in
// threads decodes each block's first entry of a version 4 index with no
// previous path (git's create_from_disk given no previous entry), so that
// entry's name is its stored suffix alone.
type ieotBlock struct{ offset, count uint32 }

const (
	modeTypeMask = 0o170000
	modeGitlink  = 0o160000
	modeDir      = 0o040000
)

// newHash gives the object format's hash for a hash length.
func newHash(hashLen int) (hash.Hash, error) {
	switch hashLen {
	case sha1.Size:
		return sha1.New(), nil
	case sha256.Size:
		return sha256.New(), nil
	}
	return nil, fmt.Errorf("no object format has %d-byte names", hashLen)
}

// ctxReader lets a cancelled sweep stop in the middle of a large index.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// indexReader reads an index's content (all but the trailing checksum)
// through a buffer, hashing it on the way, so that no index is ever held
// in memory whole.
type indexReader struct {
	br   *bufio.Reader
	pos  int64 // bytes of content consumed
	size int64 // bytes of content (the file less its checksum)
}

var errTruncated = errors.New("truncated")

func (r *indexReader) left() int64 { return r.size - r.pos }

// next gives the next n content bytes, valid until the next call.
func (r *indexReader) next(n int) ([]byte, error) {
	if int64(n) > r.left() {
		return nil, errTruncated
	}
	b, err := r.br.Peek(n)
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = errTruncated
		}
		return nil, err
	}
	r.br.Discard(n)
	r.pos += int64(n)
	return b, nil
}

func (r *indexReader) skip(n int64) error {
	if n > r.left() {
		return errTruncated
	}
	got, err := r.br.Discard(int(n))
	r.pos += int64(got)
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = errTruncated
		}
		return err
	}
	return nil
}

// cstring gives the bytes up to the next NUL, consuming the NUL too.
func (r *indexReader) cstring() ([]byte, error) {
	b, err := r.br.ReadSlice(0)
	r.pos += int64(len(b))
	switch {
	case errors.Is(err, bufio.ErrBufferFull):
		return nil, errors.New("a path longer than any filesystem allows")
	case errors.Is(err, io.EOF):
		return nil, errTruncated
	case err != nil:
		return nil, err
	case r.pos > r.size:
		return nil, errTruncated
	}
	return b[:len(b)-1], nil
}

// readIndex reads one index file of size bytes from f as git does
// (Documentation/gitformat-index.txt): versions 2 to 4, extended flags,
// path prefix compression, the link (split index) and sdir (sparse index)
// extensions, every optional extension skipped, the checksum verified.
// Anything else is an error: the caller then protects the whole
// repository rather than guess what is tracked.
func readIndex(ctx context.Context, f io.Reader, size int64, hashLen int, charge func(int64) error) (*indexFile, error) {
	ix, err := readIndexContent(ctx, f, size, hashLen, charge)
	if err != nil {
		return nil, fmt.Errorf("git index: %w", err)
	}
	return ix, nil
}

// charge, when not nil, is told the bytes of each path as it is read, and
// stops the read with its error: several walkers parsing at once share
// one budget, so that it bounds what they hold together while they parse.
// The phases: the header, the entries, the extensions, the block starts
// they give (ieot), the checksum.
func readIndexContent(ctx context.Context, f io.Reader, size int64, hashLen int, charge func(int64) error) (*indexFile, error) {
	h, err := newHash(hashLen)
	if err != nil {
		return nil, err
	}
	if size > maxIndexBytes {
		return nil, fmt.Errorf("%d bytes, more than the %d MiB read at most", size, maxIndexBytes>>20)
	}
	if size < int64(12+hashLen) {
		return nil, errTruncated
	}
	src := ctxReader{ctx, f}
	r := &indexReader{size: size - int64(hashLen)}
	tail := &tailWriter{keep: 8 + 4 + hashLen}
	r.br = bufio.NewReaderSize(io.TeeReader(io.LimitReader(src, r.size), io.MultiWriter(h, tail)), 64<<10)
	version, count, err := readHeader(r, size)
	if err != nil {
		return nil, err
	}
	ix := &indexFile{entries: make([]indexEntry, 0, count)}
	decodedMax := min(maxDecodedRatio*size+1<<20, maxDecodedBytes)
	s := &entryScan{r: r, version: version, hashLen: hashLen, fixed: 40 + hashLen + 2, starts: make([]uint32, 0, count)}
	if err := s.readEntries(ctx, ix, count, decodedMax, charge); err != nil {
		return nil, err
	}
	if err := readExtensions(r, ix, hashLen); err != nil {
		return nil, err
	}
	if err := checkEOIE(r, tail, ix, hashLen); err != nil {
		return nil, err
	}
	if err := ix.readBlockStarts(version, s.starts, s.suffixes, s.strips, s.flagLens, decodedMax); err != nil {
		return nil, err
	}
	if r.pos != r.size {
		return nil, errTruncated
	}
	if ix.sum, err = readChecksum(src, h, hashLen); err != nil {
		return nil, err
	}
	return ix, nil
}

// readHeader reads the signature, the version and the entry count, which
// must fit in what is left.
func readHeader(r *indexReader, size int64) (version uint32, count int64, err error) {
	hdr, err := r.next(12)
	if err != nil {
		return 0, 0, err
	}
	if string(hdr[:4]) != "DIRC" {
		return 0, 0, errors.New("no DIRC signature")
	}
	version = binary.BigEndian.Uint32(hdr[4:8])
	if version < 2 || version > 4 {
		return 0, 0, fmt.Errorf("version %d is not 2, 3 or 4", version)
	}
	count = int64(binary.BigEndian.Uint32(hdr[8:12]))
	if count > r.left()/minEntryBytes {
		return 0, 0, fmt.Errorf("%d entries cannot fit in %d bytes", count, size)
	}
	return version, count, nil
}

// entryScan reads the entries one after the other: each path is the
// previous one's bytes reused (version 4 compresses it against it).
type entryScan struct {
	r       *indexReader
	version uint32
	hashLen int
	fixed   int // ctime, mtime, dev, ino, mode, uid, gid, size, the object name, flags
	prev    []byte
	// Where each entry starts and (version 4) how long its stored suffix
	// is, to read block starts as a threaded reader does (ieot).
	starts           []uint32
	suffixes, strips []uint32
	flagLens         []uint16 // version 4: the name length each entry's flags give (0xfff: that or longer)
}

// readEntries reads count entries into ix, bounding the paths decoded to
// decodedMax bytes and telling charge of each.
func (s *entryScan) readEntries(ctx context.Context, ix *indexFile, count, decodedMax int64, charge func(int64) error) error {
	for i := int64(0); i < count; i++ {
		if i%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		name, mode, err := s.entry()
		if err != nil {
			return err
		}
		if ix.decoded += int64(len(name)); ix.decoded > decodedMax {
			return fmt.Errorf("its paths come to more than %d bytes, %d times the index's size", ix.decoded, maxDecodedRatio)
		}
		if charge != nil {
			if err := charge(int64(len(name))); err != nil {
				return err
			}
		}
		ix.entries = append(ix.entries, indexEntry{name: string(name), mode: mode})
		s.prev = name
	}
	return nil
}

// entry reads one entry: its fixed part, extended flags, and its path.
func (s *entryScan) entry() (name []byte, mode uint32, err error) {
	r := s.r
	s.starts = append(s.starts, uint32(r.pos))
	b, err := r.next(s.fixed)
	if err != nil {
		return nil, 0, err
	}
	mode = binary.BigEndian.Uint32(b[24:28])
	flags := binary.BigEndian.Uint16(b[40+s.hashLen:])
	entryLen := s.fixed
	if flags&0x4000 != 0 {
		x, err := r.next(2)
		if err != nil {
			return nil, 0, err
		}
		// git refuses bits it does not know (reserved, and all but
		// skip-worktree 0x4000 and intent-to-add 0x2000).
		if ext := binary.BigEndian.Uint16(x); ext&^0x6000 != 0 {
			return nil, 0, fmt.Errorf("unknown extended flags %#04x", ext)
		}
		entryLen += 2
	}
	nameLen := int(flags & 0xfff) // 0xfff: that long or longer
	if s.version == 4 {
		name, err = s.compressedName(nameLen)
	} else {
		name, err = s.paddedName(nameLen, entryLen)
	}
	return name, mode, err
}

// compressedName is a version 4 path: the previous path less N trailing
// bytes, then a NUL-terminated suffix.
func (s *entryScan) compressedName(nameLen int) ([]byte, error) {
	r, prev := s.r, s.prev
	head, err := r.br.Peek(min(10, int(max(0, r.left()))))
	if err != nil && len(head) == 0 {
		return nil, errTruncated
	}
	strip, n := offsetVarint(head)
	if n == 0 || strip > uint64(len(prev)) {
		return nil, errors.New("bad path compression")
	}
	r.skip(int64(n))
	suffix, err := r.cstring()
	if err != nil {
		return nil, err
	}
	if uint64(len(prev))-strip+uint64(len(suffix)) > maxPathBytes {
		return nil, fmt.Errorf("a path of more than %d bytes", maxPathBytes)
	}
	name := append(prev[:uint64(len(prev))-strip:uint64(len(prev))-strip], suffix...)
	s.suffixes, s.strips = append(s.suffixes, uint32(len(suffix))), append(s.strips, uint32(strip))
	s.flagLens = append(s.flagLens, uint16(nameLen))
	if nameLen < 0xfff && nameLen != len(name) {
		return nil, fmt.Errorf("path %q is not the %d bytes its flags say", name, nameLen)
	}
	return name, nil
}

// paddedName is a version 2 or 3 path: as long as the flags say (or up to
// its NUL when they say 0xfff), then NUL padding to a multiple of 8.
func (s *entryScan) paddedName(nameLen, entryLen int) ([]byte, error) {
	r := s.r
	var name []byte
	consumed := entryLen
	if nameLen < 0xfff {
		// git takes the flags' length, not the NUL, for where the path ends.
		b, err := r.next(nameLen)
		if err != nil {
			return nil, err
		}
		name = append(s.prev[:0], b...)
		consumed += nameLen
	} else {
		b, err := r.cstring()
		if err != nil {
			return nil, err
		}
		name = append(s.prev[:0], b...)
		consumed += len(name) + 1
	}
	if bytes.IndexByte(name, 0) >= 0 {
		return nil, errors.New("a path with a NUL in it")
	}
	// NUL padding to a multiple of 8, at least one byte.
	total := (entryLen + len(name) + 8) &^ 7
	if err := r.skip(int64(total - consumed)); err != nil {
		return nil, err
	}
	return name, nil
}

// checkEOIE refuses an EOIE extension anywhere but where git finds it:
// git finds EOIE by where it must be, the last bytes before the checksum,
// not by reading the extensions in turn, so one hidden in another
// extension's data (an attack's) is git's EOIE all the same, and git then
// reads the extensions from where it says.
func checkEOIE(r *indexReader, tail *tailWriter, ix *indexFile, hashLen int) error {
	if eoie := int64(tail.keep); r.size-12 >= eoie && len(tail.b) == tail.keep && string(tail.b[:4]) == "EOIE" &&
		binary.BigEndian.Uint32(tail.b[4:8]) == uint32(4+hashLen) && ix.eoieAt != r.size-eoie {
		return errors.New("an EOIE extension hidden inside another extension")
	}
	return nil
}

// readChecksum reads the checksum that ends the file and compares it
// with the hash of what came before.
func readChecksum(src io.Reader, h hash.Hash, hashLen int) ([]byte, error) {
	want := make([]byte, hashLen)
	if _, err := io.ReadFull(src, want); err != nil {
		return nil, errTruncated
	}
	// index.skipHash (git 2.40+, implied by feature.manyFiles) writes a
	// null checksum: git then does not verify it, nor do we.
	if got := h.Sum(nil); !bytes.Equal(got, want) && !bytes.Equal(want, make([]byte, hashLen)) {
		return nil, errors.New("bad checksum: the file is corrupt or was changed while it was read")
	}
	return want, nil
}

// readExtensions reads what follows the entries: each extension is a
// 4-byte signature and a 4-byte length. git's rule: one whose signature
// starts with an uppercase letter is optional (TREE, REUC, UNTR, FSMN,
// EOIE, IEOT, …) and skipped; any other must be understood.
func readExtensions(r *indexReader, ix *indexFile, hashLen int) error {
	start := r.pos
	for r.left() > 0 {
		at := r.pos
		hdr, err := r.next(8)
		if err != nil {
			return fmt.Errorf("extension header: %w", err)
		}
		sig := string(hdr[:4])
		n := int64(binary.BigEndian.Uint32(hdr[4:8]))
		if n > r.left() {
			return fmt.Errorf("extension %q: %w", sig, errTruncated)
		}
		switch {
		case sig == "link":
			if ix.linked {
				return errors.New("two link extensions")
			}
			if n > maxLinkBytes+int64(hashLen) {
				return fmt.Errorf("link extension of %d bytes", n)
			}
			data := make([]byte, n)
			if _, err := io.ReadFull(r.br, data); err != nil {
				return fmt.Errorf("link extension: %w", errTruncated)
			}
			r.pos += n
			if err := ix.readLink(data, hashLen); err != nil {
				return fmt.Errorf("link extension: %w", err)
			}
		case sig == "IEOT":
			if ix.ieot != nil || n > maxIEOTBytes || n < 4 || (n-4)%8 != 0 {
				return fmt.Errorf("IEOT extension of %d bytes", n)
			}
			data := make([]byte, n)
			if _, err := io.ReadFull(r.br, data); err != nil {
				return fmt.Errorf("IEOT extension: %w", errTruncated)
			}
			r.pos += n
			if v := binary.BigEndian.Uint32(data); v != 1 {
				return fmt.Errorf("IEOT extension version %d", v)
			}
			ix.ieot = make([]ieotBlock, 0, (n-4)/8)
			for b := data[4:]; len(b) >= 8; b = b[8:] {
				ix.ieot = append(ix.ieot, ieotBlock{binary.BigEndian.Uint32(b), binary.BigEndian.Uint32(b[4:])})
			}
		case sig == "EOIE":
			// git, loading in threads, reads the extensions from the
			// offset EOIE names when it is the last one: it must be where
			// they begin here, or git reads other extensions than these
			// (an attack hid a split index's link behind an optional one).
			if n != 4+int64(hashLen) {
				return fmt.Errorf("EOIE extension of %d bytes", n)
			}
			data := make([]byte, n)
			if _, err := io.ReadFull(r.br, data); err != nil {
				return fmt.Errorf("EOIE extension: %w", errTruncated)
			}
			r.pos += n
			ix.eoieAt = at
			if off := int64(binary.BigEndian.Uint32(data)); r.left() == 0 && off != start {
				return fmt.Errorf("its EOIE extension says the extensions begin at byte %d, not at %d where the entries end", off, start)
			}
		case sig == "sdir":
			// Sparse directory entries are recognised by their trailing
			// slash whether or not this marks the index sparse.
			if err := r.skip(n); err != nil {
				return err
			}
		case sig[0] >= 'A' && sig[0] <= 'Z':
			if err := r.skip(n); err != nil {
				return err
			}
		default:
			return fmt.Errorf("required extension %q that xfsq does not understand", sig)
		}
	}
	return nil
}

// maxIEOTBytes bounds the IEOT extension: git writes a block per thread.
const maxIEOTBytes = 4 + 8*1024

// readBlockStarts holds the index to what a reader loading its IEOT blocks
// in threads sees: the blocks must be the entries, in order, each starting
// where an entry does (else the two readings disagree on what the file
// holds, and the index cannot be read). In a version 4 index such a reader
// names each block's first entry by its suffix alone, and every later entry
// of the block from the name before it as it read that: each entry whose
// name differs so is also tracked under it (git writes an index whose two
// readings agree; a tenant's need not: both names stay tracked). limit
// bounds all the paths read, these too.
func (ix *indexFile) readBlockStarts(version uint32, starts, suffixes, strips []uint32, flagLens []uint16, limit int64) error {
	if ix.ieot == nil {
		return nil
	}
	n, at := len(ix.entries), 0
	for _, b := range ix.ieot {
		if at >= n || starts[at] != b.offset || b.count == 0 || int64(at)+int64(b.count) > int64(n) {
			return errors.New("its IEOT extension does not describe its entries")
		}
		if version == 4 && at > 0 {
			prev := ""
			for i := at; i < at+int(b.count); i++ {
				e := ix.entries[i]
				suffix := e.name[len(e.name)-int(suffixes[i]):]
				// What the block's reader keeps of the name before: nothing
				// at the block's start.
				kept := 0
				if i > at {
					if int(strips[i]) > len(prev) {
						return errors.New("its IEOT blocks hold paths that a reader of blocks cannot build")
					}
					kept = len(prev) - int(strips[i])
				}
				// A name whose flags give its length is read as that many
				// bytes, less the part kept: where the two readings keep
				// different parts, the block's reader takes other bytes for
				// the suffix than the one-pass reader (past its NUL, or
				// short of it), and what it then reads of the block cannot
				// be told from this reading.
				if flagLens[i] < 0xfff && kept != len(e.name)-len(suffix) {
					return errors.New("its IEOT blocks hold paths that a reader of blocks reads from other bytes")
				}
				name := prev[:kept] + suffix
				if name != e.name {
					if len(name) > maxPathBytes {
						return fmt.Errorf("a path of more than %d bytes", maxPathBytes)
					}
					if ix.decoded += int64(len(name)); ix.decoded > limit {
						return fmt.Errorf("its paths come to more than %d bytes, %d times the index's size", ix.decoded, maxDecodedRatio)
					}
					ix.entries = append(ix.entries, indexEntry{name: name, mode: e.mode})
				}
				prev = name
			}
		}
		at += int(b.count)
	}
	if at != n {
		return errors.New("its IEOT extension does not describe its entries")
	}
	return nil
}

// readLink decodes the split index's link extension: the shared index's
// name, then (optionally) the delete and replace bitmaps over its entries.
func (ix *indexFile) readLink(data []byte, hashLen int) error {
	if len(data) < hashLen {
		return errTruncated
	}
	ix.linked, ix.base = true, data[:hashLen]
	data = data[hashLen:]
	if len(data) == 0 {
		return nil
	}
	var n int
	var err error
	if ix.del, n, err = readEWAH(data); err != nil {
		return fmt.Errorf("delete bitmap: %w", err)
	}
	data = data[n:]
	if ix.rep, n, err = readEWAH(data); err != nil {
		return fmt.Errorf("replace bitmap: %w", err)
	}
	if n != len(data) {
		return errors.New("bytes after the bitmaps")
	}
	return nil
}

// readEWAH decodes a serialised EWAH bitmap (bit count, word count, the
// 64-bit words, the last run-length word's position; big-endian) and
// returns the words it stands for (uncompressed) and the bytes used.
// Runs are expanded only up to maxIndexBytes/minEntryBytes bits: no index
// allowed has more entries for a bit to name.
func readEWAH(b []byte) ([]uint64, int, error) {
	if len(b) < 8 {
		return nil, 0, errTruncated
	}
	words := int64(binary.BigEndian.Uint32(b[4:8]))
	used := 8 + words*8 + 4
	if used > int64(len(b)) {
		return nil, 0, errTruncated
	}
	const maxWords = (maxIndexBytes/minEntryBytes)/64 + 1
	var out []uint64
	w := b[8 : 8+words*8]
	for len(w) > 0 {
		rlw := binary.BigEndian.Uint64(w)
		w = w[8:]
		run, lits := (rlw>>1)&0xffffffff, rlw>>33
		if int64(len(out))+int64(run)+int64(lits) > maxWords {
			return nil, 0, errors.New("names more entries than any index holds")
		}
		fill := uint64(0)
		if rlw&1 != 0 {
			fill = ^uint64(0)
		}
		for range run {
			out = append(out, fill)
		}
		if uint64(len(w)/8) < lits {
			return nil, 0, errTruncated
		}
		for range lits {
			out = append(out, binary.BigEndian.Uint64(w))
			w = w[8:]
		}
	}
	return out, int(used), nil
}

// bitSet reports whether bit i of an uncompressed bitmap is set.
func bitSet(words []uint64, i int) bool {
	return i/64 < len(words) && words[i/64]&(1<<(i%64)) != 0
}

// lastBit is one past the highest set bit, 0 if none.
func lastBit(words []uint64) int {
	for i := len(words) - 1; i >= 0; i-- {
		if words[i] != 0 {
			return i*64 + 64 - bits.LeadingZeros64(words[i])
		}
	}
	return 0
}

// mergeSplit makes a split index's final entries from its shared index's,
// as git does: the replace bitmap's n-th set bit swaps that shared entry
// for the split file's n-th entry (an empty path keeps the shared one's),
// deleted shared entries go (after replacing), the split file's remaining
// entries are added.
func mergeSplit(split, shared *indexFile) ([]indexEntry, error) {
	if shared.linked {
		return nil, errors.New("the shared index is itself split")
	}
	n := len(shared.entries)
	if lastBit(split.del) > n {
		return nil, fmt.Errorf("the delete bitmap names entry %d of a shared index of %d", lastBit(split.del)-1, n)
	}
	if lastBit(split.rep) > n {
		return nil, fmt.Errorf("the replace bitmap names entry %d of a shared index of %d", lastBit(split.rep)-1, n)
	}
	out := make([]indexEntry, 0, n+len(split.entries))
	k := 0
	for i, e := range shared.entries {
		if bitSet(split.rep, i) {
			if k >= len(split.entries) {
				return nil, fmt.Errorf("more replacements than the %d entries of the split index", len(split.entries))
			}
			if r := split.entries[k]; r.name != "" {
				e = r
			} else {
				e.mode = r.mode
			}
			k++
		}
		if !bitSet(split.del, i) {
			out = append(out, e)
		}
	}
	for _, e := range split.entries[k:] {
		if e.name == "" {
			return nil, errors.New("an added entry without a path")
		}
		out = append(out, e)
	}
	return out, nil
}

// newIndex indexes entries for the walk's look-ups.
func newIndex(entries []indexEntry) *Index {
	ix := &Index{files: make([]string, 0, len(entries)), gitlinks: map[string]bool{}, sparse: map[string]bool{}}
	for _, e := range entries {
		switch {
		case strings.HasSuffix(e.name, "/") || e.mode&modeTypeMask == modeDir:
			ix.sparse[strings.TrimSuffix(e.name, "/")] = true
		case e.mode&modeTypeMask == modeGitlink:
			ix.gitlinks[e.name] = true
			ix.files = append(ix.files, e.name)
		default:
			ix.files = append(ix.files, e.name)
		}
	}
	// git keeps entries sorted, but this is a tenant's file: sort anyway
	// (cheap on sorted input) so that look-ups never miss.
	slices.Sort(ix.files)
	ix.files = slices.Compact(ix.files)
	return ix
}

// parseIndex reads a whole index held in memory (tests and fuzzing): a
// split index's shared entries are not there, so it is refused.
func parseIndex(data []byte, hashLen int) (*Index, error) {
	f, err := readIndex(context.Background(), bytes.NewReader(data), int64(len(data)), hashLen, nil)
	if err != nil {
		return nil, err
	}
	if f.linked && !bytes.Equal(f.base, make([]byte, hashLen)) {
		return nil, errors.New("git index: split index without its shared index")
	}
	return newIndex(f.entries), nil
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
