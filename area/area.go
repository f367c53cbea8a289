// Package area is the vocabulary of a sandbox root's trees: the areas a
// tree may be of (a project's workspace, cache and scratch, the root's
// own inbound), the directory each area's trees live in, the orders they
// are listed and swept in, the skeleton every workspace has, and the words
// a reason uses for an entry's file type. Every package that names an
// area, builds a tree's path or says what kind of file it met speaks it
// from here, so that no two can disagree.
//
// It is a leaf: it imports nothing of xfsq, does no I/O and keeps no
// state.
package area

import (
	"fmt"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// The areas. A project's scratch is one tree (scratch/PROJECT) holding its
// runs' directories (scratch/PROJECT/RUN): the runs share the project's
// scratch limit, and a run that fills it stops there, not at the disk.
const (
	Workspace = "workspace"
	Cache     = "cache"
	Scratch   = "scratch"
	// Inbound is the root's channel staging, <root>/inbound: one tree of
	// the root's own (no project's), with its own project ID and limits,
	// so that a channel cannot fill the disk through it. No lease covers
	// it: no run owns it.
	Inbound = "inbound"
)

// OfProject lists the areas a project is given, in order.
var OfProject = []string{Workspace, Cache, Scratch}

// All are the areas a tree may be of: a project's, then the root's own.
var All = []string{Workspace, Cache, Scratch, Inbound}

// SweepOrder is All in the order a sweep works on them: caches first, as
// they are meant to be thrown away.
var SweepOrder = []string{Cache, Workspace, Scratch, Inbound}

// base is where each area's trees live under the root.
var base = map[string]string{Workspace: "projects", Cache: "cache", Scratch: "scratch", Inbound: "inbound"}

// Bases are the directories under the root that the areas' trees live in,
// made by init; none but inbound (a tree itself) may carry PROJINHERIT.
var Bases = []string{"projects", "cache", "scratch", "inbound"}

// Base is the directory under the root an area's trees live in; "" for
// a name that is no area.
func Base(a string) string { return base[a] }

// Known reports whether a is an area.
func Known(a string) bool {
	_, ok := base[a]
	return ok
}

// UnknownError is a name that is no area.
type UnknownError struct {
	Name  string
	Among []string // the areas the caller accepts, in the order it lists them
}

func (e *UnknownError) Error() string {
	return fmt.Sprintf("unknown area %q: use %s", e.Name, strings.Join(e.Among, ", "))
}

// Check refuses a name that is not one of among with an *UnknownError.
func Check(a string, among []string) error {
	if !slices.Contains(among, a) {
		return &UnknownError{Name: a, Among: among}
	}
	return nil
}

// TreePath is the tree (relative to the root) of a project's area: its
// base and the project's name, joined as they are and never cleaned (a
// name that does not clean names no tree); the inbound tree is the whole
// of inbound/, whoever the caller names as its owner. "" for a name that
// is no area.
func TreePath(project, a string) string {
	switch b := base[a]; {
	case b == "":
		return ""
	case a == Inbound:
		return b
	default:
		return b + "/" + project
	}
}

// workspaceSkeleton are made in every workspace and never swept.
var workspaceSkeleton = []string{"uploads", "inbox"}

// Skeleton lists the directories every tree of area a has, made with it.
func Skeleton(a string) []string {
	if a == Workspace {
		return slices.Clone(workspaceSkeleton)
	}
	return nil
}

// IsSkeleton reports whether p (clean, relative to a tree of area a) is
// one of the directories every tree of that area has: they may be
// emptied, never removed.
func IsSkeleton(a, p string) bool {
	return a == Workspace && slices.Contains(workspaceSkeleton, p)
}

// FileKind names the file type of a mode (st_mode) as a reason says it:
// "it is a FIFO (named pipe)", ".git is a symlink".
func FileKind(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return "a regular file"
	case unix.S_IFDIR:
		return "a directory"
	case unix.S_IFLNK:
		return "a symlink"
	case unix.S_IFIFO:
		return "a FIFO (named pipe)"
	case unix.S_IFSOCK:
		return "a socket"
	case unix.S_IFCHR:
		return "a character device"
	case unix.S_IFBLK:
		return "a block device"
	}
	return "of an unknown type"
}
