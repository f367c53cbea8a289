package core

import (
	"slices"
)

// IsZero is a Backend never filled in: a tree of an answer that gives the
// backend once, at its top (BackendOnce), carries none.
func (b Backend) IsZero() bool { return b.Kind == "" && !b.Enforced && b.Reason == "" }

// treesWithoutBackend is a copy of trees without their backend: the
// fallback's reason is a paragraph, and an answer repeated it per tree.
func treesWithoutBackend(trees []TreeStatus) []TreeStatus {
	if trees == nil {
		return nil
	}
	out := slices.Clone(trees)
	for i := range out {
		out[i].Backend = Backend{}
	}
	return out
}

// BackendOnce is p with the backend at its top only, as the API answers.
func (p Project) BackendOnce() Project { p.Trees = treesWithoutBackend(p.Trees); return p }
