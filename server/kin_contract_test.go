package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// The contract as a maintained validator reads it: kin-openapi (a test
// dependency only) checks each request a test makes and each answer it
// gets against openapi.json, besides internal/testsupport/apispec's checks. It reads
// the document as any client generator would, so a path, a media type or
// a status the description does not allow is found here.

var kin = struct {
	once   sync.Once
	doc    *openapi3.T
	router routers.Router
	err    error
}{}

func kinRouter(t testing.TB) (*openapi3.T, routers.Router) {
	t.Helper()
	kin.once.Do(func() {
		// The dashboard's page and assets are text the validator need
		// not parse: their media type is what is checked. So are a
		// download's several ranges, as the description allows them.
		for _, ct := range []string{"text/html", "text/javascript", "text/css", "application/openmetrics-text", "multipart/byteranges"} {
			openapi3filter.RegisterBodyDecoder(ct, openapi3filter.PlainBodyDecoder)
		}
		loader := openapi3.NewLoader()
		if kin.doc, kin.err = loader.LoadFromData(OpenAPI); kin.err != nil {
			return
		}
		if kin.err = kin.doc.Validate(loader.Context); kin.err != nil {
			return
		}
		kin.router, kin.err = gorillamux.NewRouter(kin.doc)
	})
	if kin.err != nil {
		t.Fatalf("kin-openapi cannot read openapi.json: %v", kin.err)
	}
	return kin.doc, kin.router
}

// kinCheck validates one exchange: the request as sent (its body given
// apart, the handler having read it) and the answer as written.
func kinCheck(t testing.TB, r *http.Request, reqBody []byte, status int, header http.Header, body []byte) error {
	_, router := kinRouter(t)
	req := r.Clone(context.Background())
	req.Body = io.NopCloser(bytes.NewReader(reqBody))
	if req.URL.Host == "" {
		req.URL.Host = r.Host
	}
	if req.URL.Scheme == "" {
		req.URL.Scheme = "http"
	}
	if req.Method == http.MethodHead {
		// Every GET answers HEAD too, as openapi.json's description says:
		// checked as the GET it is without its body.
		req.Method = http.MethodGet
	}
	opts := &openapi3filter.Options{
		AuthenticationFunc: func(context.Context, *openapi3filter.AuthenticationInput) error { return nil },
		MultiError:         true,
	}
	if strings.HasSuffix(r.Pattern, "/files/{path...}") {
		// A file's bytes, of any media type: nothing in them to check.
		opts.ExcludeRequestBody = true
		// The server takes a file's path with its slashes unencoded too,
		// which no path parameter can describe: checked in the %2F form
		// the description gives (and the Go client sends).
		prefix := strings.TrimSuffix(req.URL.Path, r.PathValue("path"))
		req.URL.Path = prefix + r.PathValue("path")
		req.URL.RawPath = prefix + url.PathEscape(r.PathValue("path"))
	}
	route, params, err := router.FindRoute(req)
	if err != nil {
		return fmt.Errorf("%s %s matches no operation: %v", r.Method, r.URL.EscapedPath(), err)
	}
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: opts}
	if status < 400 {
		// A request the server refused may well be one the description
		// refuses too; one it took must be one the description allows.
		if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
			return fmt.Errorf("%s %s: the request the server took is not one openapi.json allows: %v", r.Method, r.URL.EscapedPath(), err)
		}
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: status, Header: header,
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true, ExcludeResponseBody: r.Method == http.MethodHead}}
	out.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		var me openapi3.MultiError
		if errors.As(err, &me) && len(me) == 0 {
			return nil
		}
		return fmt.Errorf("%s %s %d: the answer is not one openapi.json allows: %v", r.Method, r.URL.EscapedPath(), status, err)
	}
	return nil
}
