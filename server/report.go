package server

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	apiv1 "github.com/xfsq/xfsq/api/v1"
	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/sandbox"
	"github.com/xfsq/xfsq/settings"
)

// The routes of what the CLI reads and the API read too: the report,
// settings and doctor, each over the core call its command makes.

// report is GET /v1/workspace/storage/report: xfsq report's rows, filters
// and check (sandbox.ReportOptions), for the projects the caller may see.
func (s *Server) report(w http.ResponseWriter, r *http.Request) error {
	q, err := queryValues(r, "sort", "over")
	if err != nil {
		return err
	}
	all := r.URL.Query()
	o := sandbox.ReportOptions{Projects: queryList(all["project"]), Areas: queryList(all["area"]), Sort: q["sort"],
		Scope: CallerOf(r.Context()).Projects}
	for _, f := range []struct {
		name string
		dst  *bool
	}{{"check", &o.Check}, {"refresh", &o.Read.Refresh}} {
		if *f.dst, err = queryBool(r, f.name); err != nil {
			return err
		}
	}
	if v := q["over"]; v != "" {
		over, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return errkind.New(errkind.Input, fmt.Errorf("query parameter over=%q: use a percentage, 0 or more (e.g. 90)", v))
		}
		o.Over = &over
	}
	res, err := s.m.ReportOf(r.Context(), o)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, sandbox.ReportBackendOnce(res))
	return nil
}

// queryList is a list parameter given as repeated or comma-separated values.
func queryList(values []string) []string {
	var out []string
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") {
			if part = strings.TrimSpace(part); part != "" {
				out = append(out, part)
			}
		}
	}
	return out
}

// settings is GET /v1/settings: every setting, as settings list. A bad
// environment value shows as that setting's problem, as in the listing.
func (s *Server) settings(w http.ResponseWriter, r *http.Request) error {
	vals, err := s.m.Settings(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, vals)
	return nil
}

// setting is GET /v1/settings/{key}, as settings get.
func (s *Server) setting(w http.ResponseWriter, r *http.Request) error {
	v, err := s.m.Setting(r.Context(), r.PathValue("key"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

// setSetting is PUT /v1/settings/{key}, as settings set: validated, and
// journalled as settings.changed by the core.
func (s *Server) setSetting(w http.ResponseWriter, r *http.Request) error {
	var req apiv1.SetSettingRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	v, was, err := s.m.SetSettingExplicit(r.Context(), r.PathValue("key"), req.Value, req.AllowZero)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, settingChange{Value: v, Was: was})
	return nil
}

// resetSetting is DELETE /v1/settings/{key}, as settings reset.
func (s *Server) resetSetting(w http.ResponseWriter, r *http.Request) error {
	v, was, err := s.m.ResetSetting(r.Context(), r.PathValue("key"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, settingChange{Value: v, Was: was})
	return nil
}

// settingChange is apiv1.SettingChange as the core's values encode it.
type settingChange struct {
	settings.Value
	Was string `json:"was"`
}

// doctor is GET /v1/system/doctor: the drift doctor finds, repairing none.
func (s *Server) doctor(w http.ResponseWriter, r *http.Request) error {
	return s.doctorAnswer(w, r, false)
}

// doctorFix is POST /v1/system/doctor/fix, as doctor --fix: each repair
// journalled (doctor.repaired) under the caller's token.
func (s *Server) doctorFix(w http.ResponseWriter, r *http.Request) error {
	return s.doctorAnswer(w, r, true)
}

func (s *Server) doctorAnswer(w http.ResponseWriter, r *http.Request, fix bool) error {
	res, err := s.m.DoctorReport(r.Context(), fix)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}
