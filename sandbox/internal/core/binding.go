package core

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/xfsq/xfsq/sandbox/internal/core/identity"
	"github.com/xfsq/xfsq/store"
)

// A root is bound to its host name (see the identity leaf beneath the
// core): the core checks the binding as it opens or initialises a root and
// records it in the store.

// bindRoot checks that the store's host name is bound to this root, binding
// it when it is not yet (at init; on the first open of a root of an older
// xfsq, which also gives the root its identity), or taking it over when
// asked. A read-only store is only checked. Nothing is written when the
// binding is refused.
func (m *Manager) bindRoot(ctx context.Context, why string, takeOver bool) error {
	var kernelUUID, fallbackKey string
	if m.xfs != nil {
		kernelUUID = m.fsUUID
	} else {
		fallbackKey = m.fsUUID
	}
	fsID := identity.FS(m.Root, kernelUUID)
	bound, err := identity.Check(ctx, m.Store, m.Root, m.identity, fsID, takeOver)
	if err != nil || bound || m.Store.ReadOnly() {
		return err // a read-only store: checked as far as it can be, bound at the next writable open
	}
	if m.identityFresh {
		if err := identity.Write(filepath.Join(m.Root, StateDir), m.identity); err != nil {
			return fmt.Errorf("record the root's identity: %w", err)
		}
		m.identityFresh = false
	}
	if why != "init" {
		why = "upgrade"
	}
	err = m.Store.Bind(ctx, store.RootBinding{RootID: m.identity, FSID: fsID, Path: m.Root}, why, m.actor(ctx), fallbackKey, takeOver)
	var c *store.BindConflict
	if errors.As(err, &c) {
		return identity.Refusal(m.Root, m.Store.Host, m.identity, fsID, c)
	}
	return err
}

// RootID is the root's identity (see bindRoot).
func (m *Manager) RootID() string { return m.identity }

// fmtLiteral is s inside a format string.
func fmtLiteral(s string) string { return strings.ReplaceAll(s, "%", "%%") }
