package registry

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/xfsq/xfsq/store/internal/base"
)

// Setting reads one stored setting; ok is false when it was never set.
func (s *Store) Setting(ctx context.Context, key string) (value string, ok bool, err error) {
	err = s.Get(ctx, &value, `SELECT value FROM settings WHERE host = ? AND key = ?`, s.Host, key)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	return value, err == nil, err
}

// Settings reads every stored setting of this host.
func (s *Store) Settings(ctx context.Context) (map[string]string, error) {
	var rows []struct {
		Key   string `db:"key"`
		Value string `db:"value"`
	}
	if err := s.Sel(ctx, &rows, `SELECT key, value FROM settings WHERE host = ?`, s.Host); err != nil {
		return nil, err
	}
	out := make(map[string]string, len(rows))
	for _, r := range rows {
		out[r.Key] = r.Value
	}
	return out, nil
}

// SetSetting stores a setting, returning the previous value ("" if none).
func (t *Tx) SetSetting(ctx context.Context, key, value string) (old string, err error) {
	err = t.Get(ctx, &old, `SELECT value FROM settings WHERE host = ? AND key = ?`, t.s.Host, key)
	if errors.Is(err, sql.ErrNoRows) {
		_, err = t.Exec(ctx, `INSERT INTO settings (host, key, value, updated_at) VALUES (?, ?, ?, ?)`, t.s.Host, key, value, base.ToMicros(time.Now()))
		return "", err
	}
	if err != nil {
		return "", err
	}
	_, err = t.Exec(ctx, `UPDATE settings SET value = ?, updated_at = ? WHERE host = ? AND key = ?`, value, base.ToMicros(time.Now()), t.s.Host, key)
	return old, err
}

// ResetSetting forgets a stored setting, so that the environment or the
// default applies again; ok is false when it was not stored.
func (t *Tx) ResetSetting(ctx context.Context, key string) (ok bool, err error) {
	res, err := t.Exec(ctx, `DELETE FROM settings WHERE host = ? AND key = ?`, t.s.Host, key)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}
