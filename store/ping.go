package store

import "context"

// Ping runs a trivial query. Host health uses it to tell a store that
// answers from one that does not, without touching a table or taking a lock.
func (s *Store) Ping(ctx context.Context) error {
	var one int
	return s.SQL.GetContext(ctx, &one, "SELECT 1")
}
