package main

import (
	"debug/elf"
	"os"
	"testing"
)

// xfsq ships as one static binary without cgo: it must run on any host
// (and inside the UML test kernel) whatever its libc. A cgo dependency
// would fail the build above; a dynamic link would show here.
func TestBinaryIsStatic(t *testing.T) {
	f, err := elf.Open(os.Getenv(envBinary))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the xfsq binary asks for a dynamic loader (PT_INTERP): build with CGO_ENABLED=0")
		}
	}
	if libs, err := f.ImportedLibraries(); err != nil || len(libs) > 0 {
		t.Errorf("the xfsq binary links %v (%v): build with CGO_ENABLED=0", libs, err)
	}
}
