// Package apispec checks real HTTP responses against the API's OpenAPI 3.1
// description (server/openapi.json), so that the description the clients
// read can never drift from what the server answers: a response's status,
// media type, body and required headers (Check, CheckResponse,
// RequiredHeaders), and the body of a request the server took
// (CheckRequest).
//
// It owns a deliberately small validator: the subset of JSON Schema 2020-12
// the description uses (type with "null", properties, required,
// additionalProperties, items, enum, const, $ref into components, oneOf,
// anyOf, allOf, minimum, format date-time). A keyword outside that subset is
// an error, not silently accepted, so the description cannot use a keyword
// this checker would ignore. It is test support: it must never be imported
// by a library or a shell.
package apispec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Spec is a loaded OpenAPI description.
type Spec struct {
	doc map[string]any
	// names are the components' schemas by their map's identity, so that
	// a property validated can be counted against the schema it is of.
	names map[uintptr]string

	mu   sync.Mutex
	seen map[string]bool // "Schema.property" seen in a valid body
}

// Load reads an OpenAPI 3.1 description in JSON.
func Load(path string) (*Spec, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(b, path)
}

// Parse reads an OpenAPI 3.1 description from b (an embedded one); name
// is what errors call it.
func Parse(b []byte, name string) (*Spec, error) {
	path := name
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if v, _ := doc["openapi"].(string); !strings.HasPrefix(v, "3.1") {
		return nil, fmt.Errorf("%s: openapi %q, want 3.1.x", path, v)
	}
	s := &Spec{doc: doc, names: map[uintptr]string{}, seen: map[string]bool{}}
	for name, sc := range s.schemas() {
		s.names[reflect.ValueOf(sc).Pointer()] = name
	}
	return s, s.checkRefs()
}

func (s *Spec) schemas() map[string]map[string]any {
	out := map[string]map[string]any{}
	comps, _ := s.doc["components"].(map[string]any)
	schemas, _ := comps["schemas"].(map[string]any)
	for name, sc := range schemas {
		if m, ok := sc.(map[string]any); ok {
			out[name] = m
		}
	}
	return out
}

func (s *Spec) saw(seen map[string]bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	maps.Copy(s.seen, seen)
}

// UnseenProperties lists "Schema.property", for each property of each
// object schema of the components, that no body the Check methods passed
// held: a field the description promises that no answer showed, perhaps
// renamed in the code and not in the description.
func (s *Spec) UnseenProperties() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for name, sc := range s.schemas() {
		props, _ := sc["properties"].(map[string]any)
		for k := range props {
			if !s.seen[name+"."+k] {
				out = append(out, name+"."+k)
			}
		}
	}
	sort.Strings(out)
	return out
}

// Operations lists "METHOD /path/template" for every operation described.
func (s *Spec) Operations() []string {
	var ops []string
	paths, _ := s.doc["paths"].(map[string]any)
	for p, item := range paths {
		for m := range item.(map[string]any) {
			if isMethod(m) {
				ops = append(ops, strings.ToUpper(m)+" "+p)
			}
		}
	}
	sort.Strings(ops)
	return ops
}

// Statuses lists the response codes an operation describes.
func (s *Spec) Statuses(method, path string) []string {
	op, err := s.operation(method, path)
	if err != nil {
		return nil
	}
	var codes []string
	for c := range op["responses"].(map[string]any) {
		codes = append(codes, c)
	}
	sort.Strings(codes)
	return codes
}

func isMethod(m string) bool {
	return slices.Contains([]string{"get", "put", "post", "delete", "patch", "head", "options"}, m)
}

func (s *Spec) operation(method, path string) (map[string]any, error) {
	paths, _ := s.doc["paths"].(map[string]any)
	item, ok := paths[path].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("path %s is not described", path)
	}
	op, ok := item[strings.ToLower(method)].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s %s is not described", method, path)
	}
	return op, nil
}

// Check validates one response: its status must be described for the
// operation (or a "default" response), its media type must be one the
// response lists, and a JSON body must match the schema.
//
// A HEAD request is checked against the GET operation of its path (net/http
// answers HEAD for every GET route): its status and media type, not its
// empty body.
func (s *Spec) Check(method, path string, status int, contentType string, body []byte) error {
	opMethod := method
	if method == "HEAD" {
		opMethod = "GET"
	}
	op, err := s.operation(opMethod, path)
	if err != nil {
		return err
	}
	responses, _ := op["responses"].(map[string]any)
	resp, ok := responses[strconv.Itoa(status)].(map[string]any)
	if !ok {
		if resp, ok = responses["default"].(map[string]any); !ok {
			return fmt.Errorf("%s %s: status %d is not described", method, path, status)
		}
	}
	return s.checkResponse(resp, method, path, status, contentType, body)
}

// CheckRequest validates a request body the server accepted: a body the
// operation takes must match its requestBody's schema, so that the
// description never refuses what the server takes. An empty body passes
// unless the requestBody is required.
func (s *Spec) CheckRequest(method, path, contentType string, body []byte) error {
	op, err := s.operation(method, path)
	if err != nil {
		return err
	}
	rb, ok := op["requestBody"].(map[string]any)
	if !ok {
		if len(bytes.TrimSpace(body)) != 0 {
			return fmt.Errorf("%s %s: a request body is accepted but none is described", method, path)
		}
		return nil
	}
	if rb, err = s.deref(rb); err != nil {
		return err
	}
	if len(body) == 0 {
		if req, _ := rb["required"].(bool); req {
			return fmt.Errorf("%s %s: an empty request body is accepted but the description requires one", method, path)
		}
		return nil
	}
	content, _ := rb["content"].(map[string]any)
	mt := strings.TrimSpace(strings.Split(contentType, ";")[0])
	media, ok := content[mt].(map[string]any)
	if !ok {
		// A body of any media type (a file's bytes).
		media, ok = content["*/*"].(map[string]any)
	}
	if !ok && mt == "" && len(content) == 1 {
		// A client that sends no Content-Type: the one media type described.
		for t, m := range content {
			mt, media, ok = t, m.(map[string]any), true
		}
	}
	if !ok {
		return fmt.Errorf("%s %s: request content type %q is not described (want one of %v)", method, path, mt, keys(content))
	}
	schema, ok := media["schema"]
	if !ok || !(mt == "application/json" || strings.HasSuffix(mt, "+json")) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("%s %s: request body is not JSON: %v", method, path, err)
	}
	seen := map[string]bool{}
	if err := s.validate(schema, v, "request $", seen); err != nil {
		return fmt.Errorf("%s %s: %v", method, path, err)
	}
	s.saw(seen)
	return nil
}

// RequiredHeaders lists the headers the response for status must carry
// (those the description marks "required": true), for an operation, or,
// with method "" and path a components/responses name, for that response.
func (s *Spec) RequiredHeaders(method, path string, status int) ([]string, error) {
	var resp map[string]any
	if method == "" {
		r, err := s.resolve("#/components/responses/" + path)
		if err != nil {
			return nil, err
		}
		resp = r
	} else {
		op, err := s.operation(method, path)
		if err != nil {
			return nil, err
		}
		responses, _ := op["responses"].(map[string]any)
		r, ok := responses[strconv.Itoa(status)].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s %s: status %d is not described", method, path, status)
		}
		resp = r
	}
	resp, err := s.deref(resp)
	if err != nil {
		return nil, err
	}
	var names []string
	headers, _ := resp["headers"].(map[string]any)
	for name, h := range headers {
		hm, ok := h.(map[string]any)
		if !ok {
			continue
		}
		if hm, err = s.deref(hm); err != nil {
			return nil, err
		}
		if req, _ := hm["required"].(bool); req {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names, nil
}

// CheckResponse validates an answer against a named response of the
// components (components/responses/NAME): for answers no operation
// describes, such as the 404 of an unknown path or the 405 of a known path
// asked with another method.
func (s *Spec) CheckResponse(name, method, path string, status int, contentType string, body []byte) error {
	resp, err := s.resolve("#/components/responses/" + name)
	if err != nil {
		return err
	}
	return s.checkResponse(resp, method, path, status, contentType, body)
}

func (s *Spec) checkResponse(resp map[string]any, method, path string, status int, contentType string, body []byte) error {
	resp, err := s.deref(resp)
	if err != nil {
		return err
	}
	content, _ := resp["content"].(map[string]any)
	if len(content) == 0 {
		if len(bytes.TrimSpace(body)) != 0 && method != "HEAD" {
			return fmt.Errorf("%s %s %d: a body is sent but none is described", method, path, status)
		}
		return nil
	}
	mt := strings.TrimSpace(strings.Split(contentType, ";")[0])
	media, ok := content[mt].(map[string]any)
	if !ok {
		return fmt.Errorf("%s %s %d: content type %q is not described (want one of %v)", method, path, status, mt, keys(content))
	}
	schema, ok := media["schema"]
	if !ok || method == "HEAD" || !(mt == "application/json" || strings.HasSuffix(mt, "+json")) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("%s %s %d: body is not JSON: %v", method, path, status, err)
	}
	seen := map[string]bool{}
	if err := s.validate(schema, v, "$", seen); err != nil {
		return fmt.Errorf("%s %s %d: %v", method, path, status, err)
	}
	s.saw(seen)
	return nil
}

func keys(m map[string]any) []string {
	var k []string
	for x := range m {
		k = append(k, x)
	}
	sort.Strings(k)
	return k
}

func (s *Spec) deref(n map[string]any) (map[string]any, error) {
	for range 16 {
		ref, ok := n["$ref"].(string)
		if !ok {
			return n, nil
		}
		t, err := s.resolve(ref)
		if err != nil {
			return nil, err
		}
		n = t
	}
	return nil, fmt.Errorf("$ref chain too deep")
}

func (s *Spec) resolve(ref string) (map[string]any, error) {
	if !strings.HasPrefix(ref, "#/") {
		return nil, fmt.Errorf("$ref %q: only local references are supported", ref)
	}
	var cur any = s.doc
	for _, part := range strings.Split(ref[2:], "/") {
		part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("$ref %q does not resolve", ref)
		}
		if cur, ok = m[part]; !ok {
			return nil, fmt.Errorf("$ref %q does not resolve", ref)
		}
	}
	m, ok := cur.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("$ref %q is not an object", ref)
	}
	return m, nil
}

// checkRefs resolves every $ref once, so a typo fails at Load.
func (s *Spec) checkRefs() error {
	var walk func(n any) error
	walk = func(n any) error {
		switch n := n.(type) {
		case map[string]any:
			if ref, ok := n["$ref"].(string); ok {
				if _, err := s.resolve(ref); err != nil {
					return err
				}
			}
			for _, c := range n {
				if err := walk(c); err != nil {
					return err
				}
			}
		case []any:
			for _, c := range n {
				if err := walk(c); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk(s.doc)
}

var known = map[string]bool{
	"type": true, "properties": true, "required": true, "additionalProperties": true, "items": true,
	"enum": true, "const": true, "$ref": true, "oneOf": true, "anyOf": true, "allOf": true,
	"minimum": true, "maximum": true, "format": true, "description": true, "title": true, "examples": true,
	"default": true, "readOnly": true, "deprecated": true,
}

func (s *Spec) validate(schema any, v any, at string, seen map[string]bool) error {
	sc, ok := schema.(map[string]any)
	if !ok {
		if b, isBool := schema.(bool); isBool {
			if !b {
				return fmt.Errorf("%s: no value is allowed here", at)
			}
			return nil
		}
		return fmt.Errorf("%s: schema is not an object", at)
	}
	for k := range sc {
		if !known[k] {
			return fmt.Errorf("%s: schema keyword %q is not supported by the checker", at, k)
		}
	}
	if ref, ok := sc["$ref"].(string); ok {
		t, err := s.resolve(ref)
		if err != nil {
			return err
		}
		if err := s.validate(t, v, at, seen); err != nil {
			return err
		}
	}
	if t, ok := sc["type"]; ok {
		var types []string
		switch t := t.(type) {
		case string:
			types = []string{t}
		case []any:
			for _, x := range t {
				types = append(types, x.(string))
			}
		}
		if !slices.ContainsFunc(types, func(t string) bool { return isType(t, v) }) {
			return fmt.Errorf("%s: %s is not of type %v", at, describe(v), types)
		}
	}
	if e, ok := sc["enum"].([]any); ok && !slices.ContainsFunc(e, func(x any) bool { return equal(x, v) }) {
		return fmt.Errorf("%s: %s is not one of %v", at, describe(v), e)
	}
	if c, ok := sc["const"]; ok && !equal(c, v) {
		return fmt.Errorf("%s: %s is not %v", at, describe(v), c)
	}
	if n, ok := v.(json.Number); ok {
		f, _ := n.Float64()
		if m, ok := sc["minimum"].(json.Number); ok {
			if mf, _ := m.Float64(); f < mf {
				return fmt.Errorf("%s: %s below minimum %s", at, n, m)
			}
		}
		if m, ok := sc["maximum"].(json.Number); ok {
			if mf, _ := m.Float64(); f > mf {
				return fmt.Errorf("%s: %s above maximum %s", at, n, m)
			}
		}
	}
	if f, _ := sc["format"].(string); f == "date-time" {
		if str, ok := v.(string); ok {
			if _, err := time.Parse(time.RFC3339Nano, str); err != nil {
				return fmt.Errorf("%s: %q is not an RFC 3339 date-time", at, str)
			}
		}
	}
	if obj, ok := v.(map[string]any); ok {
		props, _ := sc["properties"].(map[string]any)
		if req, ok := sc["required"].([]any); ok {
			for _, r := range req {
				if _, ok := obj[r.(string)]; !ok {
					return fmt.Errorf("%s: required property %q is missing", at, r)
				}
			}
		}
		for k, val := range obj {
			if ps, ok := props[k]; ok {
				if err := s.validate(ps, val, at+"."+k, seen); err != nil {
					return err
				}
				if name, ok := s.names[reflect.ValueOf(sc).Pointer()]; ok {
					seen[name+"."+k] = true
				}
				continue
			}
			if ap, ok := sc["additionalProperties"]; ok {
				if err := s.validate(ap, val, at+"."+k, seen); err != nil {
					return fmt.Errorf("%s: property %q is not described (%v)", at, k, err)
				}
			}
		}
	}
	if arr, ok := v.([]any); ok {
		if items, ok := sc["items"]; ok {
			for i, x := range arr {
				if err := s.validate(items, x, fmt.Sprintf("%s[%d]", at, i), seen); err != nil {
					return err
				}
			}
		}
	}
	if all, ok := sc["allOf"].([]any); ok {
		for _, sub := range all {
			if err := s.validate(sub, v, at, seen); err != nil {
				return err
			}
		}
	}
	if anyOf, ok := sc["anyOf"].([]any); ok {
		var errs []string
		for _, sub := range anyOf {
			branch := map[string]bool{}
			err := s.validate(sub, v, at, branch)
			if err == nil {
				maps.Copy(seen, branch)
				errs = nil
				break
			}
			errs = append(errs, err.Error())
		}
		if errs != nil {
			return fmt.Errorf("%s: matches none of anyOf: %s", at, strings.Join(errs, "; "))
		}
	}
	if oneOf, ok := sc["oneOf"].([]any); ok {
		matched := 0
		var errs []string
		for _, sub := range oneOf {
			// Only the branch that matches saw its properties.
			branch := map[string]bool{}
			if err := s.validate(sub, v, at, branch); err == nil {
				maps.Copy(seen, branch)
				matched++
			} else {
				errs = append(errs, err.Error())
			}
		}
		if matched != 1 {
			return fmt.Errorf("%s: matches %d of oneOf, want 1 (%s)", at, matched, strings.Join(errs, "; "))
		}
	}
	return nil
}

func isType(t string, v any) bool {
	switch t {
	case "null":
		return v == nil
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "number":
		_, ok := v.(json.Number)
		return ok
	case "integer":
		n, ok := v.(json.Number)
		if !ok {
			return false
		}
		if _, err := n.Int64(); err == nil {
			return true
		}
		f, err := n.Float64()
		return err == nil && f == math.Trunc(f) && !strings.ContainsAny(n.String(), ".eE")
	}
	return false
}

func equal(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

func describe(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 60 {
		b = append(b[:57], "..."...)
	}
	return string(b)
}
