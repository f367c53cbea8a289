// Package gitindex tells which paths of a workspace git tracks, by reading
// git's own files as git reads them: the index (versions 2 to 4, split,
// sparse, with the extensions that change what an entry names), the .git
// file and commondir pointers that lead to a git directory, and the
// configs that say where a repository's working tree is (core.worktree)
// and how its objects are named (extensions.objectformat). A sweep asks it
// before anything of a workspace is offered, and again just before each
// deletion.
//
// Everything it reads is a tenant's, so it must never run git, never
// follow a symlink, never open anything but a directory or a regular file
// (a FIFO at .git/index must not hang it, a device must not be opened),
// never leave the workspace tree it was given by any path, and never
// allocate from a size a file claims, only from bytes read, within
// bounds (Options.Budget). When it cannot tell what is tracked it says why,
// and the caller keeps the repository, or the whole workspace, untouched:
// it never answers "nothing tracked" for what it could not read. It deletes
// nothing and knows nothing of sweeps, policies or projects.
package gitindex
