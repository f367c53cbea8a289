package server

import (
	"compress/gzip"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// gzipMin is the smallest answer compressed: below it gzip's header and
// the CPU cost more than the bytes saved (an admission answer stays plain,
// the overview and the report do not).
const gzipMin = 4 << 10

var gzipWriters = sync.Pool{New: func() any { zw, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed); return zw }}

// gzipped is w compressing a JSON or text answer of 2xx, when r accepts
// gzip. Call finish once the handler returns. Such an answer names
// Accept-Encoding in its Vary even when it goes out plain (HEAD, or a
// client that did not ask): a shared cache would otherwise keep the plain
// body and hand it to every client, or the gzipped one to a client that
// cannot read it (RFC 9110 §12.5.5).
func gzipped(w http.ResponseWriter, r *http.Request) (http.ResponseWriter, func()) {
	g := &gzipWriter{ResponseWriter: w}
	if r.Method == http.MethodHead || !acceptsGzip(r.Header.Get("Accept-Encoding")) {
		g.plainOnly = true
	}
	return g, g.finish
}

// acceptsGzip reads Accept-Encoding (RFC 9110 §12.5.3): gzip is accepted
// when its own entry has a quality above 0, or, without one, "*" has. A
// quality is any of its parameters named q; one that is no number is no
// acceptance (the plain body is always safe to send).
func acceptsGzip(header string) bool {
	gzip, star := -1.0, -1.0 // not named
	for part := range strings.SplitSeq(header, ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		switch strings.ToLower(strings.TrimSpace(coding)) {
		case "gzip":
			if gzip < 0 {
				gzip = quality(params)
			}
		case "*":
			if star < 0 {
				star = quality(params)
			}
		}
	}
	if gzip >= 0 {
		return gzip > 0
	}
	return star > 0
}

// vary adds token to h's Vary unless it is named there already: a handler
// whose 304 must carry the 200's Vary names Accept-Encoding itself, before
// this middleware sees the answer.
func vary(h http.Header, token string) {
	for _, v := range h.Values("Vary") {
		for part := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(part), token) {
				return
			}
		}
	}
	h.Add("Vary", token)
}

// quality is the q of an Accept-Encoding entry's parameters (1 without one).
func quality(params string) float64 {
	for p := range strings.SplitSeq(params, ";") {
		k, v, ok := strings.Cut(p, "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(k), "q") {
			continue
		}
		q, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || q < 0 {
			return 0
		}
		return q
	}
	return 1
}

// compressible: an answer whose body is text of the API's (a file's
// bytes are the tenant's, and a range or an encoding set already is not
// to be touched).
func compressible(status int, h http.Header) bool {
	if status < 200 || status >= 300 || status == http.StatusNoContent || status == http.StatusPartialContent || h.Get("Content-Encoding") != "" {
		return false
	}
	ct := h.Get("Content-Type")
	return strings.HasPrefix(ct, "application/json") || strings.HasPrefix(ct, "text/")
}

type gzipState int

const (
	gzipUndecided gzipState = iota // the header held, the body buffered up to gzipMin
	gzipPlain
	gzipOn
)

// gzipWriter holds a compressible answer's header until its body is known
// to reach gzipMin (from Content-Length, or by buffering that much).
type gzipWriter struct {
	http.ResponseWriter
	status int
	state  gzipState
	buf    []byte
	zw     *gzip.Writer
	// plainOnly: this client gets the body as it is, only the Vary told.
	plainOnly bool
}

func (g *gzipWriter) WriteHeader(code int) {
	if code < 200 {
		g.ResponseWriter.WriteHeader(code)
		return
	}
	if g.status != 0 {
		return
	}
	g.status = code
	h := g.Header()
	if !compressible(code, h) {
		g.state = gzipPlain
		g.ResponseWriter.WriteHeader(code)
		return
	}
	vary(h, "Accept-Encoding")
	if g.plainOnly {
		g.state = gzipPlain
		g.ResponseWriter.WriteHeader(code)
		return
	}
	if cl := h.Get("Content-Length"); cl != "" {
		if n, err := strconv.Atoi(cl); err != nil || n < gzipMin {
			g.state = gzipPlain
			g.ResponseWriter.WriteHeader(code)
			return
		}
		g.start()
	}
}

func (g *gzipWriter) start() {
	h := g.Header()
	h.Del("Content-Length")
	h.Set("Content-Encoding", "gzip")
	g.ResponseWriter.WriteHeader(g.status)
	g.zw = gzipWriters.Get().(*gzip.Writer)
	g.zw.Reset(g.ResponseWriter)
	g.state = gzipOn
}

func (g *gzipWriter) Write(b []byte) (int, error) {
	if g.status == 0 {
		g.WriteHeader(http.StatusOK)
	}
	switch g.state {
	case gzipPlain:
		return g.ResponseWriter.Write(b)
	case gzipOn:
		return g.zw.Write(b)
	}
	g.buf = append(g.buf, b...)
	if len(g.buf) >= gzipMin {
		g.start()
		_, err := g.zw.Write(g.buf)
		g.buf = nil
		if err != nil {
			return 0, err
		}
	}
	return len(b), nil
}

// finish sends what is held: a short body plain, with its length.
func (g *gzipWriter) finish() {
	switch g.state {
	case gzipUndecided:
		if g.status == 0 {
			return
		}
		g.Header().Set("Content-Length", strconv.Itoa(len(g.buf)))
		g.ResponseWriter.WriteHeader(g.status)
		g.ResponseWriter.Write(g.buf)
		g.state = gzipPlain
	case gzipOn:
		g.zw.Close()
		g.zw.Reset(nil)
		gzipWriters.Put(g.zw)
		g.zw, g.state = nil, gzipPlain
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (g *gzipWriter) Unwrap() http.ResponseWriter { return g.ResponseWriter }
