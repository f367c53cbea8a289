package core

import (
	"context"
	"fmt"

	"github.com/xfsq/xfsq/errkind"
)

// The fleet's hosts as the use cases share them: the fleet view (package
// fleet) lists them, and the read model's journal query across hosts
// refuses a name the store has never heard of, in the same words.

// UnknownHost is the error for a host name the store has never heard of: a
// typo must not read as a host with nothing on it.
func UnknownHost(name string) error {
	return errkind.WithFix(errkind.NotFound, fmt.Errorf("host %q %w in this store: it never beat and holds no project", name, ErrNotFound),
		errkind.Fix("see %s", errkind.Do(errkind.OpHostList, "")))
}

// CheckHosts refuses a host name the store has never heard of (an event
// query across hosts, say): every host that beat, retired ones included,
// and every host known only by the projects it registered.
func (m *Manager) CheckHosts(ctx context.Context, names []string) error {
	if len(names) == 0 {
		return nil
	}
	rows, err := m.Store.FleetHosts(ctx)
	if err != nil {
		return fmt.Errorf("read the fleet: %w", err)
	}
	known := make(map[string]bool, len(rows))
	for _, r := range rows {
		known[r.Host] = true
	}
	for _, n := range names {
		if !known[n] {
			return UnknownHost(n)
		}
	}
	return nil
}
