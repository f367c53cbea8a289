package server_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/internal/testsupport/fixture"
	"github.com/xfsq/xfsq/server"
)

// TestOpenAPIDescribesTheRouteTable: every route of the table has an
// operation in openapi.json and every operation is a route, so neither
// can grow without the other.
func TestOpenAPIDescribesTheRouteTable(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		ts := newServer(t, r)
		var routes []string
		for _, rt := range ts.s.Routes() {
			routes = append(routes, rt.Method+" "+server.SpecPath(rt.Pattern))
		}
		sort.Strings(routes)
		ops := server.Spec(t).Operations()
		for _, rt := range routes {
			if !slices.Contains(ops, rt) {
				t.Errorf("route %s has no operation in server/openapi.json: describe it", rt)
			}
		}
		for _, op := range ops {
			if !slices.Contains(routes, op) {
				t.Errorf("openapi.json describes %s, which is no route of the table", op)
			}
		}
	})
}

// TestOpenAPIProblems: each problem response of the description carries
// the type URI and status the server really sends for it, and every error
// kind of the library has one.
func TestOpenAPIProblems(t *testing.T) {
	var doc struct {
		Components struct {
			Responses map[string]struct {
				Content map[string]struct {
					Schema struct {
						AllOf []struct {
							Properties struct {
								Type   struct{ Const string }
								Status struct{ Const int }
							}
						}
					}
				}
			}
		}
	}
	if err := json.Unmarshal(server.OpenAPI, &doc); err != nil {
		t.Fatal(err)
	}
	described := map[string]int{} // type URI → status
	for name, resp := range doc.Components.Responses {
		media, ok := resp.Content[server.ProblemType]
		if !ok || len(media.Schema.AllOf) != 2 {
			t.Errorf("response %s: want a %s of allOf [Problem, {type, status}]", name, server.ProblemType)
			continue
		}
		p := media.Schema.AllOf[1].Properties
		described[p.Type.Const] = p.Status.Const
	}
	want := map[string]int{
		server.TypeUnauthorized:         http.StatusUnauthorized,
		server.TypeForbidden:            http.StatusForbidden,
		server.TypeMethodNotAllowed:     http.StatusMethodNotAllowed,
		server.TypeMisdirected:          http.StatusMisdirectedRequest,
		server.TypeUnsupportedMediaType: http.StatusUnsupportedMediaType,
	}
	for k := errkind.Kind(0); ; k++ {
		if k.String() == "internal" && k != errkind.Internal {
			break // past the last kind
		}
		want[k.TypeURI()] = k.HTTPStatus()
	}
	for uri, status := range want {
		if got, ok := described[uri]; !ok || got != status {
			t.Errorf("problem type %s: described with status %d (present %v), want %d", uri, got, ok, status)
		}
	}
	for uri := range described {
		if _, ok := want[uri]; !ok {
			t.Errorf("openapi.json describes a problem type %s the server never sends", uri)
		}
	}
}

// TestOpenAPIObjectsAreClosed: every object schema says
// additionalProperties false, so that a field added to a Go type the
// server encodes, and not to the description, fails the contract test.
// openObjects are the exceptions, each with why.
func TestOpenAPIObjectsAreClosed(t *testing.T) {
	openObjects := map[string]string{
		// journal.Event.MarshalJSON lifts the payload's fields to the top
		// level; the payload is each event type's own.
		"#/components/schemas/Event": "payload fields lifted",
	}
	var doc map[string]any
	if err := json.Unmarshal(server.OpenAPI, &doc); err != nil {
		t.Fatal(err)
	}
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	var walk func(at string, n any)
	walk = func(at string, n any) {
		m, ok := n.(map[string]any)
		if !ok {
			return
		}
		if _, has := m["properties"]; has && m["type"] == "object" {
			if _, open := openObjects[at]; m["additionalProperties"] != false && !open {
				t.Errorf("%s: an object without additionalProperties: false", at)
			}
		}
		for k, v := range m {
			walk(at+"/"+k, v)
		}
	}
	for name, s := range schemas {
		walk("#/components/schemas/"+name, s)
	}
}

// TestOpenAPIServed: GET /v1/openapi.json is the description, byte for
// byte, with no token.
func TestOpenAPIServed(t *testing.T) {
	fixture.ForEach(t, func(t *testing.T, r *fixture.Root) {
		ts := newServer(t, r)
		code, h, body := ts.raw(t, "GET", "/v1/openapi.json", "", "")
		if code != 200 || h.Get("Content-Type") != "application/json" || body != string(server.OpenAPI) {
			t.Errorf("GET /v1/openapi.json: %d %s, %d bytes, want the %d of openapi.json", code, h.Get("Content-Type"), len(body), len(server.OpenAPI))
		}
		if !strings.Contains(body, `"openapi": "3.1.0"`) {
			t.Errorf("not OpenAPI 3.1.0: %.80s", body)
		}
		// HEAD, which net/http answers for every GET route, is checked
		// against the GET operation by the contract middleware.
		if code, h, body := ts.raw(t, "HEAD", "/v1/openapi.json", "", ""); code != 200 || h.Get("Content-Type") != "application/json" || body != "" {
			t.Errorf("HEAD /v1/openapi.json: %d %s %q", code, h.Get("Content-Type"), body)
		}
	})
}
