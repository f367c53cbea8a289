package area

import (
	"errors"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// Every list names the same areas: a sweep, a project's trees and init's
// directories cannot drift apart.
func TestListsAgree(t *testing.T) {
	if !slices.Equal(All[:len(OfProject)], OfProject) || All[len(All)-1] != Inbound {
		t.Errorf("All = %v, want OfProject %v then %s", All, OfProject, Inbound)
	}
	if got := slices.Sorted(slices.Values(SweepOrder)); !slices.Equal(got, slices.Sorted(slices.Values(All))) || SweepOrder[0] != Cache {
		t.Errorf("SweepOrder = %v, want All %v with the cache first", SweepOrder, All)
	}
	var bases []string
	for _, a := range All {
		if !Known(a) || Base(a) == "" {
			t.Errorf("%s is not known or has no base", a)
		}
		bases = append(bases, Base(a))
	}
	if !slices.Equal(bases, Bases) {
		t.Errorf("the bases of All are %v, Bases %v", bases, Bases)
	}
}

func TestTreePath(t *testing.T) {
	for _, c := range []struct{ project, area, want string }{
		{"omni", Workspace, "projects/omni"},
		{"omni", Cache, "cache/omni"},
		{"omni", Scratch, "scratch/omni"},
		{"_root", Inbound, "inbound"},
		{"omni", Inbound, "inbound"},      // the root's one tree, whoever is named
		{"a/../b", Cache, "cache/a/../b"}, // never cleaned into another project's tree
		{"omni", "trash", ""},
	} {
		if got := TreePath(c.project, c.area); got != c.want {
			t.Errorf("TreePath(%q, %q) = %q, want %q", c.project, c.area, got, c.want)
		}
	}
}

func TestCheck(t *testing.T) {
	if err := Check(Inbound, All); err != nil {
		t.Errorf("Check(inbound): %v", err)
	}
	var unknown *UnknownError
	err := Check("trash", SweepOrder)
	if !errors.As(err, &unknown) || err.Error() != `unknown area "trash": use cache, workspace, scratch, inbound` {
		t.Errorf("Check(trash) = %v, want an UnknownError listing the areas in the order given", err)
	}
	if Check(Inbound, OfProject) == nil {
		t.Error("inbound passed as a project's area")
	}
}

func TestSkeleton(t *testing.T) {
	if !IsSkeleton(Workspace, "uploads") || !IsSkeleton(Workspace, "inbox") || IsSkeleton(Cache, "uploads") || IsSkeleton(Workspace, "src") {
		t.Error("the skeleton is a workspace's uploads/ and inbox/ only")
	}
	if s := Skeleton(Workspace); !slices.Equal(s, []string{"uploads", "inbox"}) || Skeleton(Scratch) != nil {
		t.Errorf("Skeleton(workspace) = %v", s)
	}
}

func TestFileKind(t *testing.T) {
	for mode, want := range map[uint32]string{
		unix.S_IFREG | 0o644: "a regular file",
		unix.S_IFDIR | 0o755: "a directory",
		unix.S_IFLNK | 0o777: "a symlink",
		unix.S_IFIFO | 0o644: "a FIFO (named pipe)",
		unix.S_IFSOCK:        "a socket",
		unix.S_IFCHR:         "a character device",
		unix.S_IFBLK:         "a block device",
		0:                    "of an unknown type",
	} {
		if got := FileKind(mode); got != want {
			t.Errorf("FileKind(%o) = %q, want %q", mode, got, want)
		}
	}
}
