// Package atomicfile replaces files so that a reader sees the old content or
// the new, never a mix, and a crash leaves one of the two: write a temporary
// file in the same directory, fsync it, rename it over the target.
package atomicfile

import (
	"os"
	"path/filepath"
)

// WriteFile replaces path with data, with permissions mode.
func WriteFile(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
