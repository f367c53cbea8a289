package core

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/xfsq/xfsq/store"
)

// readCache keeps, per project, what a read without refresh takes from the
// store — the project's row and its trees' statuses on the fallback, the
// rows alone on XFS, whose usage is the kernel's and read every time — for
// as long as that project's store version is unchanged. A server answers
// `admission` before every run of every project; without it each answer
// is several queries, with it at most one cheap lookup.
//
// Two tokens guard a kept answer. The store's generation moves with any
// commit anywhere: while it stands, nothing can have changed and the
// answer is given without a query. When it has moved, the project's own
// version (store.VersionAt, moved by triggers in the committing
// transaction, whoever commits) says whether this project changed: a
// snapshot pass committing walk after walk of other projects costs the
// whole cache one small read per commit (the store follows every
// project's version at once), not a re-read. Both are read before the
// data they guard, so a kept answer is at worst re-read once too often,
// never kept past a change.
type readCache struct {
	mu       sync.Mutex
	projects map[string]cachedProject

	usage usageCache // Usage's whole-root answer

	// marks keeps the store's change mark under the generation it was
	// read at (changeMark).
	marks struct {
		mu  sync.Mutex
		gen store.Generation
		at  store.ChangeMark
	}

	// reread counts the projects read from the store rather than kept,
	// by Show and by Usage: what the tests hold the cache to.
	reread atomic.Int64
}

type cachedProject struct {
	version store.Version    // of the store when the data was read
	gen     store.Generation // the generation at which version was last confirmed
	row     store.Project
	trees   []store.Tree
	// statuses are the fallback's figures, nil on XFS.
	statuses []TreeStatus
}

// readToken is what a miss learned: under which generation and version a
// fresh read may be kept (an unknown gen: it may not).
type readToken struct {
	gen     store.Generation
	version store.Version
}

// generation reads the store's generation, unknown when nothing may be kept.
func (m *Manager) generation(ctx context.Context) store.Generation {
	g, err := m.Store.Generation(ctx)
	if err != nil {
		return store.Generation{}
	}
	return g
}

// lookup returns name's kept answer when it is still right; otherwise the
// token under which the caller's fresh read may be kept. The answer's
// slices are the cache's own: the caller copies what it changes or hands
// out (show copies the statuses it stamps; the trees it only reads).
func (m *Manager) lookup(ctx context.Context, name string) (cachedProject, bool, readToken) {
	gen := m.generation(ctx) // before the reads it guards (store.Generation)
	if !gen.Known() {
		return cachedProject{}, false, readToken{}
	}
	c := &m.reads
	c.mu.Lock()
	p, ok := c.projects[name]
	c.mu.Unlock()
	if ok && p.gen == gen {
		return p, true, readToken{}
	}
	v, err := m.Store.VersionAt(ctx, gen, name)
	if err != nil {
		return cachedProject{}, false, readToken{}
	}
	if ok && p.version == v {
		c.mu.Lock()
		if q, ok := c.projects[name]; ok && q.version == v {
			q.gen = gen
			c.projects[name] = q
		}
		c.mu.Unlock()
		return p, true, readToken{}
	}
	return cachedProject{}, false, readToken{gen: gen, version: v}
}

// keep stores a fresh read of name under tok. An older read finishing
// after a newer one is not kept over it: versions only grow.
func (m *Manager) keep(name string, tok readToken, p cachedProject) {
	if !tok.gen.Known() {
		return
	}
	c := &m.reads
	c.mu.Lock()
	defer c.mu.Unlock()
	if q, ok := c.projects[name]; ok && (q.version.Project > tok.version.Project || q.version.Settings > tok.version.Settings) {
		return
	}
	if c.projects == nil {
		c.projects = map[string]cachedProject{}
	}
	p.gen, p.version = tok.gen, tok.version
	c.projects[name] = p.clone()
}

// clone is p with slices of its own: callers own what they are given, so
// that one caller's change cannot reach the next caller's answer.
func (p cachedProject) clone() cachedProject {
	p.trees, p.statuses = slices.Clone(p.trees), slices.Clone(p.statuses)
	return p
}

// usageCache keeps Usage's reads of the whole root: on the fallback every
// project's statuses, on XFS the recorded trees, each with the version it
// was read at, so that a scrape after a commit re-reads only the projects
// whose version moved.
type usageCache struct {
	mu       store.Lock // one refresh at a time (taken within a request's store budget); guards the fields below
	gen      store.Generation
	versions store.Versions
	byName   map[string][]TreeStatus // the fallback's, per project
	all      []TreeStatus            // byName's, in project order; nil: to be assembled
	at       map[string]int          // where each project's trees start in all
	trees    []store.Tree            // XFS's, every project's
}

// fullUsageRead is how many changed projects make Usage read the whole
// root in one statement rather than project by project (each a few
// statements).
const fullUsageRead = 32

// changeMark is the store's change mark, asked of the database only when
// the store's generation moved since it was last asked: under load every
// overview request asking it was a query each, and on SQLite a connection
// opened each beyond the pool's idle two, which put a tail of tens of
// milliseconds on requests that otherwise write cached bytes. The
// generation is read first, so a mark kept under it is never older than
// what the generation stands for (store.Generation).
func (m *Manager) changeMark(ctx context.Context) (store.ChangeMark, error) {
	gen := m.generation(ctx)
	c := &m.reads.marks
	c.mu.Lock()
	if gen.Known() && gen == c.gen {
		mark := c.at
		c.mu.Unlock()
		return mark, nil
	}
	c.mu.Unlock()
	mark, err := m.Store.ChangeMark(ctx)
	if err == nil && gen.Known() {
		c.mu.Lock()
		c.gen, c.at = gen, mark
		c.mu.Unlock()
	}
	return mark, err
}
