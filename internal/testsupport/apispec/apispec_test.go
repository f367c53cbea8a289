package apispec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	s, err := Load("testdata/mini.json")
	if err != nil {
		t.Fatal(err)
	}
	const path = "/things/{id}"
	for _, c := range []struct {
		name, ct, body string
		status         int
		err            string // "" valid, else a part of the error
	}{
		{"valid", "application/json", `{"name":"x","size_bytes":18446744073709551615,"kind":"a","seen_at":"2026-12-01T10:00:00Z","tags":["t"]}`, 200, ""},
		{"null allowed", "application/json; charset=utf-8", `{"name":"x","size_bytes":0,"seen_at":null}`, 200, ""},
		{"missing required", "application/json", `{"name":"x"}`, 200, `required property "size_bytes"`},
		{"wrong type", "application/json", `{"name":1,"size_bytes":0}`, 200, `$.name`},
		{"not integer", "application/json", `{"name":"x","size_bytes":1.5}`, 200, "integer"},
		{"negative", "application/json", `{"name":"x","size_bytes":-1}`, 200, "minimum"},
		{"enum", "application/json", `{"name":"x","size_bytes":0,"kind":"c"}`, 200, "not one of"},
		{"bad time", "application/json", `{"name":"x","size_bytes":0,"seen_at":"yesterday"}`, 200, "RFC 3339"},
		{"extra property", "application/json", `{"name":"x","size_bytes":0,"size":3}`, 200, `property "size" is not described`},
		{"item type", "application/json", `{"name":"x","size_bytes":0,"tags":[1]}`, 200, "$.tags[0]"},
		{"undescribed media", "text/plain", `hi`, 200, "content type"},
		{"not json", "application/json", `{`, 200, "not JSON"},
		{"default problem", "application/problem+json", `{"type":"https://xfsq.dev/problems/input","status":400}`, 400, ""},
		{"problem shape", "application/problem+json", `{"status":400}`, 404, `required property "type"`},
		{"no body described", "", ``, 304, ""},
		{"body where none is", "text/plain", `x`, 304, "none is described"},
	} {
		err := s.Check("GET", path, c.status, c.ct, []byte(c.body))
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.err)
		}
	}
	if err := s.Check("POST", path, 200, "application/json", []byte(`{}`)); err == nil {
		t.Error("an undescribed method passed")
	}
	if got := s.Operations(); len(got) != 2 || got[0] != "GET /things/{id}" || got[1] != "PUT /things/{id}" {
		t.Errorf("operations %v", got)
	}
}

// TestLoadRefusesWhatItCannotCheck: a dangling $ref or a keyword outside
// the subset must fail, never be ignored.
func TestLoadRefusesWhatItCannotCheck(t *testing.T) {
	b, _ := os.ReadFile("testdata/mini.json")
	dir := t.TempDir()
	dangling := filepath.Join(dir, "dangling.json")
	os.WriteFile(dangling, []byte(strings.Replace(string(b), "#/components/schemas/Thing", "#/components/schemas/Thin", 1)), 0o644)
	if _, err := Load(dangling); err == nil || !strings.Contains(err.Error(), "Thin") {
		t.Errorf("dangling $ref: %v", err)
	}
	pattern := filepath.Join(dir, "pattern.json")
	os.WriteFile(pattern, []byte(strings.Replace(string(b), `"name": {"type": "string"}`, `"name": {"type": "string", "pattern": "^a"}`, 1)), 0o644)
	s, err := Load(pattern)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Check("GET", "/things/{id}", 200, "application/json", []byte(`{"name":"b","size_bytes":0}`)); err == nil || !strings.Contains(err.Error(), "pattern") {
		t.Errorf("unsupported keyword: %v", err)
	}
}

// TestHeadAndComponentResponses: a HEAD answer is checked against its
// GET operation without a body; an answer no operation describes is
// checked against a named response of the components.
func TestHeadAndComponentResponses(t *testing.T) {
	b, err := os.ReadFile("testdata/mini.json")
	if err != nil {
		t.Fatal(err)
	}
	s, err := Parse(b, "mini")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Check("HEAD", "/things/{id}", 200, "application/json", nil); err != nil {
		t.Errorf("HEAD of a GET: %v", err)
	}
	if err := s.Check("HEAD", "/things/{id}", 200, "text/plain", nil); err == nil {
		t.Error("HEAD with an undescribed media type passed")
	}
	if err := s.CheckResponse("Problem", "PUT", "/nowhere", 404, "application/problem+json", []byte(`{"type":"x","status":404}`)); err != nil {
		t.Errorf("component response: %v", err)
	}
	if err := s.CheckResponse("Problem", "PUT", "/nowhere", 404, "application/problem+json", []byte(`{"status":404}`)); err == nil {
		t.Error("a problem without its type passed the component response")
	}
	if err := s.CheckResponse("Nothing", "PUT", "/nowhere", 404, "application/problem+json", []byte(`{}`)); err == nil {
		t.Error("an undefined component response passed")
	}
}

// TestCheckRequest: an accepted request body must match the operation's
// requestBody; an empty one passes when it is not required.
func TestCheckRequest(t *testing.T) {
	s, err := Load("testdata/mini.json")
	if err != nil {
		t.Fatal(err)
	}
	const path = "/things/{id}"
	for _, c := range []struct {
		name, method, ct, body, err string
	}{
		{"valid", "PUT", "application/json", `{"name":"x","size_bytes":1}`, ""},
		{"no content type", "PUT", "", `{"name":"x","size_bytes":1}`, ""},
		{"empty", "PUT", "application/json", ``, ""},
		{"missing field", "PUT", "application/json", `{"name":"x"}`, `required property "size_bytes"`},
		{"extra field", "PUT", "application/json", `{"name":"x","size_bytes":1,"z":1}`, `property "z" is not described`},
		{"other media", "PUT", "text/plain", `x`, "request content type"},
		{"body where none is", "GET", "application/json", `{}`, "none is described"},
	} {
		err := s.CheckRequest(c.method, path, c.ct, []byte(c.body))
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.err)
		}
	}
}

// TestRequiredHeaders: the headers marked required, of an operation's
// response and of a named response of the components.
func TestRequiredHeaders(t *testing.T) {
	s, err := Load("testdata/mini.json")
	if err != nil {
		t.Fatal(err)
	}
	if h, err := s.RequiredHeaders("GET", "/things/{id}", 304); err != nil || strings.Join(h, ",") != "ETag" {
		t.Errorf("304: %v %v, want [ETag]", h, err)
	}
	if h, err := s.RequiredHeaders("GET", "/things/{id}", 200); err != nil || len(h) != 0 {
		t.Errorf("200: %v %v, want none", h, err)
	}
	if h, err := s.RequiredHeaders("", "Problem", 0); err != nil || strings.Join(h, ",") != "WWW-Authenticate" {
		t.Errorf("component: %v %v", h, err)
	}
	if _, err := s.RequiredHeaders("GET", "/things/{id}", 418); err == nil {
		t.Error("an undescribed status has headers")
	}
}

// TestUnseenProperties: a property counts as seen only in a body that
// passed, and only in the oneOf branch that matched.
func TestUnseenProperties(t *testing.T) {
	s, err := Load("testdata/mini.json")
	if err != nil {
		t.Fatal(err)
	}
	s.Check("GET", "/things/{id}", 200, "application/json", []byte(`{"name":"x","size_bytes":1,"kind":"z"}`)) // fails: kind
	if err := s.Check("GET", "/things/{id}", 200, "application/json", []byte(`{"name":"x","size_bytes":1,"tags":[]}`)); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(s.UnseenProperties(), " ")
	for _, want := range []string{"Thing.kind", "Thing.seen_at", "Problem.type"} {
		if !strings.Contains(got, want) {
			t.Errorf("unseen %q, want %s among them", got, want)
		}
	}
	for _, seen := range []string{"Thing.name", "Thing.size_bytes", "Thing.tags"} {
		if strings.Contains(got, seen) {
			t.Errorf("unseen %q lists %s, which a valid body held", got, seen)
		}
	}
}
