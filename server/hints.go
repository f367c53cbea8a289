package server

import (
	"encoding/json"
	"net/url"
	"strconv"
	"strings"

	"github.com/xfsq/xfsq/errkind"
)

// apiWords words what a library hint names as this API does: an input as
// its JSON member (the library's name), an operation as the request that
// makes it, or, for one run on the host only (init, doctor), as the
// operation named neutrally.
var apiWords = errkind.Words{Field: func(f string) string { return f }, Action: request}

const projectsPath = "/v1/workspace/storage/projects"

// opRoutes is the request of each operation the API has (method and path;
// {id} is the action's target). TestEveryHintedOpIsWorded holds that each
// is a route of the server's table, and every other op is host-only.
var opRoutes = map[errkind.Op]string{
	errkind.OpProjectList:   "GET " + projectsPath,
	errkind.OpProjectShow:   "GET " + projectsPath + "/{id}",
	errkind.OpProjectAdd:    "POST " + projectsPath,
	errkind.OpProjectRemove: "DELETE " + projectsPath + "/{id}",
	errkind.OpFilesRemove:   "DELETE " + projectsPath + "/{id}/files/{path...}",
	errkind.OpLeaseList:     "GET " + projectsPath + "/{id}/leases",
	errkind.OpLeaseRelease:  "DELETE " + projectsPath + "/{id}/leases/{run}",
	errkind.OpHostList:      "GET /v1/fleet/hosts",
	errkind.OpEvents:        "GET /v1/workspace/storage/events",
	errkind.OpSweep:         "POST " + projectsPath + "/{id}/sweep",
	errkind.OpTop:           "GET " + projectsPath + "/{id}",
	errkind.OpReport:        "GET /v1/workspace/storage",
}

// hostOnly are the operations the API does not offer: run on the host.
var hostOnly = map[errkind.Op]bool{errkind.OpInit: true, errkind.OpDoctor: true}

// member is an input as a JSON body has it: a switch is true, areas a
// list.
func member(g errkind.Arg) string {
	v, _ := json.Marshal(g.Value)
	switch {
	case g.Value == "":
		v = []byte("true")
	case g.Field == "areas":
		v, _ = json.Marshal(strings.Split(g.Value, ","))
	}
	return strconv.Quote(g.Field) + ": " + string(v)
}

// request is the request that makes a: its route with the target in
// place of {id}, and its inputs as the query (a GET or DELETE) or the
// JSON body's members (a POST). An input the API has no member for
// (plan_out: the API keeps a plan by its id) is left out.
func request(a errkind.Action) string {
	route, ok := opRoutes[a.Op]
	if !ok {
		return "on the host: " + a.String()
	}
	if a.Target != "" {
		route = strings.Replace(route, "{id}", a.Target, 1)
	}
	method, _, _ := strings.Cut(route, " ")
	var q url.Values
	var body []string
	for _, g := range a.Args {
		if g.Field == "plan_out" {
			continue
		}
		v := g.Value
		if v == "" {
			v = "true"
		}
		if method == "POST" {
			body = append(body, member(g))
			continue
		}
		if q == nil {
			q = url.Values{}
		}
		q.Add(g.Field, v)
	}
	switch {
	case len(body) > 0:
		route += " {" + strings.Join(body, ", ") + "}"
	case q != nil:
		route += "?" + q.Encode()
	}
	return route
}
