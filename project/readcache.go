package project

import (
	"context"
	"slices"
	"sync"

	"github.com/xfsq/xfsq/store"
)

// readCache keeps, per project, what a read without refresh takes from the
// store — the project's row and its trees' statuses on the fallback, the
// rows alone on XFS, whose usage is the kernel's and read every time — for
// as long as the store's generation is unchanged. A server answers
// `admission` before every run of every project; without it each answer
// is several queries, with it one cheap probe. Any commit anywhere (this
// process, the CLI, another host) moves the generation and empties it, so
// it never answers from before a change it could have seen.
type readCache struct {
	mu       sync.Mutex
	gen      string
	projects map[string]cachedProject
}

type cachedProject struct {
	row   store.Project
	trees []store.Tree
	// statuses are the fallback's figures, nil on XFS.
	statuses []TreeStatus
}

// generation reads the store's generation, "" when nothing may be kept.
func (m *Manager) generation(ctx context.Context) string {
	g, err := m.Store.Generation(ctx)
	if err != nil {
		return ""
	}
	return g
}

func (c *readCache) get(gen, name string) (cachedProject, bool) {
	if gen == "" {
		return cachedProject{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		c.gen, c.projects = gen, nil
		return cachedProject{}, false
	}
	p, ok := c.projects[name]
	if !ok {
		return cachedProject{}, false
	}
	// Callers own what they are given: copies, so that one caller's
	// change cannot reach the next caller's answer.
	p.trees, p.statuses = slices.Clone(p.trees), slices.Clone(p.statuses)
	return p, true
}

// put keeps p as read under gen. A put under a generation older than the
// cache's current one is harmless: get hands out only what was kept under
// the generation its caller has just read, and a generation never repeats.
func (c *readCache) put(gen, name string, p cachedProject) {
	if gen == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen || c.projects == nil {
		c.gen, c.projects = gen, map[string]cachedProject{}
	}
	p.trees, p.statuses = slices.Clone(p.trees), slices.Clone(p.statuses)
	c.projects[name] = p
}
