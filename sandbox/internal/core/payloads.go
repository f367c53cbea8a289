package core

import (
	"github.com/xfsq/xfsq/journal"
	"github.com/xfsq/xfsq/quota"
)

// What the core journals, as the journal's payloads state it: each
// converts a result of this package to the record that says it happened.
// A record keeps the fields it had when it was first journalled; a field
// added to a result reaches the journal only when its payload names it.

func limitsPayload(l quota.Limits) journal.Limits {
	return journal.Limits{BytesSoft: l.BytesSoft, BytesHard: l.BytesHard, InodesSoft: l.InodesSoft, InodesHard: l.InodesHard}
}
