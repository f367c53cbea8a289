package server

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"net/http"
	"path"
	"sync"
	"time"

	"github.com/xfsq/xfsq/errkind"
)

// The dashboard (docs/api.md#the-dashboard) is three static files embedded in the binary, a
// client of this API like any other: the page asks the operator for a
// token and every figure it shows comes from the API with it, so the roles
// and a limited reader's projects hold there as everywhere. The files hold
// no data, so they are served without a token (a browser cannot send a
// bearer token when it navigates); the token lives in the tab's
// sessionStorage and travels only in an Authorization header, which no
// other site can make the browser send. The Content-Security-Policy lets
// the page run its own script only: a name a tenant chose can never become
// markup or script, and the page never makes it one (it sets text only).
//
//go:embed ui
var uiFiles embed.FS

// uiAsset is one embedded file as served: its bytes, type and validator.
type uiAsset struct {
	data  []byte
	ctype string
	etag  string
}

// uiAssets is loaded at the first request for it, not at every command's
// start: hashing the dashboard is work only serve needs.
var uiAssets = sync.OnceValue(loadUI)

func loadUI() map[string]uiAsset {
	types := map[string]string{".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}
	out := map[string]uiAsset{}
	entries, err := uiFiles.ReadDir("ui")
	if err != nil {
		panic("server: the dashboard's files are not embedded: " + err.Error()) // a build defect, caught by the dashboard's tests
	}
	for _, e := range entries {
		data, err := uiFiles.ReadFile("ui/" + e.Name())
		ctype, ok := types[path.Ext(e.Name())]
		if err != nil || !ok {
			panic("server: dashboard file " + e.Name() + " cannot be served")
		}
		sum := sha256.Sum256(data)
		out[e.Name()] = uiAsset{data: data, ctype: ctype, etag: `W/"` + hex.EncodeToString(sum[:8]) + `"`}
	}
	return out
}

// uiPolicy: the page's own script and style, requests to this origin only,
// never framed, no form posted anywhere.
const uiPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// dashboard serves the page.
func (s *Server) dashboard(w http.ResponseWriter, r *http.Request) { serveUI(w, r, "index.html") }

// dashboardFile serves the page's script and style.
func (s *Server) dashboardFile(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("file")
	if name == "index.html" {
		name = "" // the page is served at / only
	}
	serveUI(w, r, name)
}

func serveUI(w http.ResponseWriter, r *http.Request, name string) {
	a, ok := uiAssets()[name]
	if !ok {
		WriteProblem(w, errkind.New(errkind.NotFound, errors.New("no such file of the dashboard")))
		return
	}
	h := w.Header()
	h.Set("Content-Type", a.ctype)
	h.Set("Content-Security-Policy", uiPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	// Revalidated every time (an upgrade changes them); the ETag makes
	// that a 304.
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", a.etag)
	// Every file of the page is text the middleware gzips for a client
	// asking: ServeContent's 304 names the 200's Vary too (RFC 9110 §15.4.5).
	vary(h, "Accept-Encoding")
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(a.data))
}
