package core

import (
	"context"
	"fmt"

	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/store"
)

func notFound(name string) error {
	return errkind.WithFix(errkind.NotFound, fmt.Errorf("project %q %w", name, ErrNotFound), errkind.Fix("see %s", errkind.Do(errkind.OpProjectList, "")))
}

// ProjectRecord is a project as the store lists it.
type ProjectRecord = store.Project

// List returns the projects without reading usage.
// The result is never nil: a shell encodes it as [] without thinking.
func (m *Manager) List(ctx context.Context) ([]store.Project, error) {
	ps, err := m.Store.Projects(ctx)
	if ps == nil && err == nil {
		ps = []store.Project{}
	}
	return ps, err
}
