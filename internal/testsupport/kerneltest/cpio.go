package kerneltest

import (
	"compress/gzip"
	"fmt"
	"io"
	"strings"
)

// cpioWriter writes the "newc" cpio format the kernel unpacks as an
// initramfs (Documentation/driver-api/early-userspace/buffer-format.rst).
// Written here rather than by cpio(1) so the harness needs one Debian
// package fewer and the archive is the same on every machine (no mtimes).
type cpioWriter struct {
	w   io.Writer
	ino int
	err error
}

const (
	cpioDir  = 0o040000
	cpioFile = 0o100000
	cpioChar = 0o020000
)

func (c *cpioWriter) entry(name string, mode uint32, rdevMajor, rdevMinor int, data []byte) {
	if c.err != nil {
		return
	}
	c.ino++
	nameZ := name + "\x00"
	hdr := fmt.Sprintf("070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
		c.ino, mode, 0, 0, 1, 0, len(data), 0, 0, rdevMajor, rdevMinor, len(nameZ), 0)
	c.write([]byte(hdr + nameZ))
	c.pad(len(hdr) + len(nameZ))
	c.write(data)
	c.pad(len(data))
}

func (c *cpioWriter) write(b []byte) {
	if c.err == nil {
		_, c.err = c.w.Write(b)
	}
}

// pad aligns what follows a header+name or a body to 4 bytes.
func (c *cpioWriter) pad(n int) {
	if r := n % 4; r != 0 {
		c.write(make([]byte, 4-r))
	}
}

// initramfsFile is one file of the initramfs.
type initramfsFile struct {
	path string // without a leading /
	mode uint32 // permission bits
	data []byte
}

// writeInitramfs writes a gzip-compressed newc archive holding the given
// directories (and their parents), files and /dev/console.
func writeInitramfs(w io.Writer, dirs []string, files []initramfsFile) error {
	gz, err := gzip.NewWriterLevel(w, gzip.BestSpeed)
	if err != nil {
		return err
	}
	c := &cpioWriter{w: gz}
	made := map[string]bool{}
	var mkdirs func(dir string)
	mkdirs = func(dir string) {
		if dir == "" || dir == "." || made[dir] {
			return
		}
		if i := strings.LastIndex(dir, "/"); i > 0 {
			mkdirs(dir[:i])
		}
		made[dir] = true
		c.entry(dir, cpioDir|0o755, 0, 0, nil)
	}
	mkdirs("dev")
	// The kernel opens /dev/console for init's stdio before init can mount
	// devtmpfs: without the node init would start with no output at all.
	c.entry("dev/console", cpioChar|0o600, 5, 1, nil)
	for _, d := range dirs {
		mkdirs(d)
	}
	for _, f := range files {
		if i := strings.LastIndex(f.path, "/"); i > 0 {
			mkdirs(f.path[:i])
		}
		c.entry(f.path, cpioFile|f.mode, 0, 0, f.data)
	}
	c.entry("TRAILER!!!", 0, 0, 0, nil)
	if c.err != nil {
		return c.err
	}
	return gz.Close()
}
