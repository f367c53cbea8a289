package server

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	apiv1 "github.com/xfsq/xfsq/api/v1"
	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/sandbox"
)

// The fleet's routes read across the hosts sharing the store. A reader
// limited to some projects may not use them: a project name means another
// project on each host, and the fleet's host names are not its to know.

func (s *Server) fleetRoutes() []Route {
	return []Route{
		{"GET", "/v1/fleet/hosts", RoleReader, s.wholeFleet(answered(s.log, s.fleetHosts))},
		{"GET", "/v1/fleet/storage", RoleReader, s.wholeFleet(answered(s.log, s.fleetStorage))},
		{"POST", "/v1/fleet/hosts/{host}/retire", RoleOperator, s.wholeFleet(answered(s.log, s.retireHost))},
	}
}

// wholeFleet refuses a reader limited to some projects.
func (s *Server) wholeFleet(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if c := CallerOf(r.Context()); c.Projects != nil {
			writeAuthProblem(w, http.StatusForbidden, TypeForbidden, fleetForbidden(c))
			return
		}
		h(w, r)
	}
}

func fleetForbidden(c Caller) string {
	return fmt.Sprintf("token %q is limited to some projects; the fleet's hosts, storage and events across hosts need an unlimited token", c.Name)
}

func (s *Server) fleetHosts(w http.ResponseWriter, r *http.Request) error {
	fleet, err := s.m.FleetHosts(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, fleet)
	return nil
}

func (s *Server) fleetStorage(w http.ResponseWriter, r *http.Request) error {
	out, err := s.m.FleetStorage(r.Context(), sandbox.FleetQuery{Hosts: r.URL.Query()["host"]})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) retireHost(w http.ResponseWriter, r *http.Request) error {
	var req apiv1.RetireRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	out, err := s.m.RetireHost(r.Context(), r.PathValue("host"), req.Force)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// eventHosts reads ?host= (repeatable) and ?all_hosts= of an events
// query; a limited reader may read only this host's.
func eventHosts(r *http.Request, q *sandbox.EventQuery) error {
	q.Hosts = r.URL.Query()["host"]
	a, err := queryOne(r, "all_hosts")
	if err != nil {
		return err
	}
	if a != "" {
		all, err := strconv.ParseBool(a)
		if err != nil {
			return errkind.New(errkind.Input, fmt.Errorf("query parameter all_hosts=%q: use true or false", a))
		}
		q.AllHosts = all
	}
	if c := CallerOf(r.Context()); c.Projects != nil && (q.AllHosts || len(q.Hosts) > 0) {
		return errkind.New(errkind.Input, fmt.Errorf("%s", fleetForbidden(c)))
	}
	return nil
}

// Heartbeats records this host in the fleet every fleet_heartbeat_interval
// (read again at each beat), each beat bounded by the interval so that a
// store that does not answer never holds the loop past the next one.
type Heartbeats struct {
	Root *sandbox.Root
	Log  *slog.Logger
}

// Run beats until ctx is cancelled; a failed beat is logged once per
// change of outcome (an outage logs its start and its end, not every beat).
func (h *Heartbeats) Run(ctx context.Context) {
	interval, failing := 30*time.Second, false
	for {
		if iv, err := h.Root.HeartbeatInterval(ctx); err == nil && iv > 0 {
			interval = iv
		}
		bctx, cancel := context.WithTimeout(ctx, interval)
		err := h.Root.Heartbeat(bctx, interval)
		cancel()
		switch {
		case ctx.Err() != nil:
			return
		case err != nil && !failing:
			h.Log.Warn("fleet heartbeat failed: other hosts will show this one stale", "error", err.Error())
		case err == nil && failing:
			h.Log.Info("fleet heartbeat recorded again")
		}
		failing = err != nil
		t := time.NewTimer(interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}
