package core

import (
	apiv1 "github.com/xfsq/xfsq/api/v1"
	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/quota"
	"github.com/xfsq/xfsq/store"
)

// What the core journals, as the journal's payloads state it: each
// converts a result of this package to the record that says it happened.
// A record keeps the fields it had when it was first journalled; a field
// added to a result reaches the journal only when its payload names it.

func limitsPayload(l quota.Limits) journal.Limits {
	return journal.Limits{BytesSoft: l.BytesSoft, BytesHard: l.BytesHard, InodesSoft: l.InodesSoft, InodesHard: l.InodesHard}
}

func addedPayload(backend string, trees []store.Tree) journal.ProjectAdded {
	return journal.ProjectAdded{Backend: backend, Trees: each(trees, func(t store.Tree) journal.Tree {
		return journal.Tree{Project: t.Project, Area: t.Area, Path: t.Path, Backend: t.Backend, FSUUID: t.FSUUID,
			ProjectID: uint32(t.ProjectID), Limits: limitsPayload(t.Limits)}
	})}
}

func removedPayload(r RemoveResult) journal.ProjectRemoved {
	return journal.ProjectRemoved{Project: r.Project, Purged: r.Purged, Forced: r.Forced, HeldLeases: r.HeldLeases,
		EndedLeases: r.EndedLeases, KeptIDs: r.KeptIDs, Left: r.Left,
		PurgedTrees: each(r.PurgedTrees, func(t Purged) journal.PurgedTree {
			return journal.PurgedTree{Path: t.Path, State: t.State, Entries: t.RemovedEntries, Bytes: t.FreedBytes, Inodes: t.FreedInodes,
				Left: each(t.Left, func(l apiv1.Left) journal.Left { return journal.Left(l) })}
		})}
}

// each is f of every element of in; nil stays nil, as JSON's null does.
func each[T, U any](in []T, f func(T) U) []U {
	if in == nil {
		return nil
	}
	out := make([]U, len(in))
	for i, v := range in {
		out[i] = f(v)
	}
	return out
}
