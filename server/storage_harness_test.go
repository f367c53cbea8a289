package server

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/xfsq/xfsq/sandbox"
)

// routes maps "METHOD PATTERN" to a handler, as the core's route table will.
type routes map[string]http.HandlerFunc

// storageTestServer serves routes over real HTTP with a stand-in for the
// auth middleware: the caller and its actor in the context, and 404 for an
// {id} it may not see — the contract handlers are written against.
func storageTestServer(t testing.TB, caller Caller, rs routes) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	for pattern, h := range rs {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			if id := r.PathValue("id"); id != "" && !caller.Sees(id) {
				WriteProblem(w, projectNotFound(id)) // the middleware's answer
				return
			}
			ctx := sandbox.WithActor(withCaller(r.Context(), caller), caller.Name)
			h(w, r.WithContext(ctx))
		})
	}
	front := cleanPathsOnly(mux, func(h http.HandlerFunc) http.Handler { return h })
	srv := httptest.NewServer(contractCheckedUnlessBench(t, front))
	t.Cleanup(srv.Close)
	return srv
}

// contractCheckedUnlessBench is ContractChecked for a test; a benchmark
// measures the handler alone.
func contractCheckedUnlessBench(t testing.TB, h http.Handler) http.Handler {
	if _, bench := t.(*testing.B); bench {
		return h
	}
	return ContractChecked(t, h)
}

var operator = Caller{Name: "ops-bot", Role: RoleOperator}

// tokens are a fixed token set, bearer to caller (the token file's
// parsing is daemon's, and tested there).
type tokens map[string]Caller

func (ts tokens) Lookup(bearer string) (Caller, bool) { c, ok := ts[bearer]; return c, ok }

// do sends one request and returns the response with its body read.
func do(t testing.TB, method, url string, body io.Reader, header ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, url, err)
	}
	return resp, string(b)
}

func put(t testing.TB, url, body string) (*http.Response, string) {
	t.Helper()
	return do(t, http.MethodPut, url, strings.NewReader(body))
}
