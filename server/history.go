package server

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/sandbox"
	"github.com/xfsq/xfsq/units"
)

// ProjectHistory answers GET /v1/workspace/storage/projects/{id}/history:
// each of the project's trees' stored snapshot totals over ?since= (default
// the whole snapshot window), at most ?points= a tree, with its limits now.
func (a *storageAPI) ProjectHistory(w http.ResponseWriter, r *http.Request) error {
	o, err := historyOptions(r)
	if err != nil {
		return err
	}
	h, err := a.m.ProjectHistory(r.Context(), r.PathValue("id"), o)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, h)
	return nil
}

// DiskHistory answers GET /v1/workspace/storage/history: the root's disk
// use at each scheduled snapshot pass over ?since=, at most ?points=.
func (a *storageAPI) DiskHistory(w http.ResponseWriter, r *http.Request) error {
	o, err := historyOptions(r)
	if err != nil {
		return err
	}
	h, err := a.m.DiskHistory(r.Context(), o)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, h)
	return nil
}

func historyOptions(r *http.Request) (sandbox.HistoryOptions, error) {
	var o sandbox.HistoryOptions
	since, err := queryOne(r, "since")
	if err != nil {
		return o, err
	}
	points, err := queryOne(r, "points")
	if err != nil {
		return o, err
	}
	if since != "" {
		d, err := units.ParseDuration(since)
		if err != nil || d <= 0 {
			return o, errkind.New(errkind.Input, fmt.Errorf("since %q: use a duration such as 24h, 7d or 35d", since))
		}
		o.Since = d
	}
	if points != "" {
		n, err := strconv.Atoi(points)
		if err != nil || n < 2 || n > sandbox.MaxHistoryPoints {
			return o, errkind.New(errkind.Input, fmt.Errorf("points %q: use a whole number from 2 to %d", points, sandbox.MaxHistoryPoints))
		}
		o.Points = n
	}
	return o, nil
}
