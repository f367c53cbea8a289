package server

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/sandbox"
	"github.com/xfsq/xfsq/units"
)

// Diff answers GET /v1/workspace/storage/projects/{id}/diff: what changed
// in one of the project's trees between its newest stored snapshot and
// the one kept from ?since= before it (default 24h), read from the store.
func (a *storageAPI) Diff(w http.ResponseWriter, r *http.Request) error {
	var o sandbox.DiffOptions
	q, err := queryValues(r, "area", "since", "top")
	if err != nil {
		return err
	}
	o.Area = q["area"]
	if v := q["since"]; v != "" {
		d, err := units.ParseDuration(v)
		if err != nil || d <= 0 {
			return errkind.New(errkind.Input, fmt.Errorf("since %q: use a duration such as 6h, 24h or 7d", v))
		}
		o.Since = d
	}
	if v := q["top"]; v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > sandbox.MaxDiffTop {
			return errkind.New(errkind.Input, fmt.Errorf("top %q: use a whole number from 1 to %d", v, sandbox.MaxDiffTop))
		}
		o.Top = n
	}
	d, err := a.m.Diff(r.Context(), r.PathValue("id"), o)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, d)
	return nil
}
