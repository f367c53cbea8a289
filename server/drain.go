package server

import (
	"context"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/xfsq/xfsq/settings"
)

// watchedBody is a request body that remembers whether a handler read it
// and whether it reached its end.
type watchedBody struct {
	io.ReadCloser
	read int64
	eof  bool
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.read += int64(n)
	if err != nil {
		b.eof = true // the end, or a body that cannot be read on: nothing to drain
	}
	return n, err
}

// watchBody makes *r a copy whose body tells the guard, once the handler
// is done, how much of it is left unread; nil for a request without one
// (*r is then left as it is). The copy: net/http must keep seeing its own
// request's body, which it checks by type (Expect: 100-continue).
func watchBody(r **http.Request) *watchedBody {
	if (*r).Body == nil || (*r).Body == http.NoBody {
		return nil
	}
	*r = (*r).WithContext((*r).Context())
	b := &watchedBody{ReadCloser: (*r).Body}
	(*r).Body = b
	return b
}

// drainUnread reads and discards what the handler left of the body, up to
// the drain limit, before net/http writes the answer and closes. A client
// that writes its whole body before reading (Python's urllib, many
// scripts) would otherwise be reset by the close on unread data, and its
// 507 or 401 lost with it. A client that said Expect: 100-continue and
// was refused before any read was never told to send: it gets the answer
// at once, and nothing is read.
func (s *Server) drainUnread(r *http.Request, b *watchedBody) {
	if b == nil || b.eof {
		return
	}
	if b.read == 0 && strings.EqualFold(r.Header.Get("Expect"), "100-continue") {
		return
	}
	io.CopyN(io.Discard, b, s.drainBound(r.Context()))
}

// drainBound is Config.DrainLimit, else the upload_refusal_drain setting
// (its default when the store does not answer promptly: a refusal must not
// wait on it).
func (s *Server) drainBound(ctx context.Context) int64 {
	if s.drainLimit > 0 {
		return s.drainLimit
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	v, err := s.m.Setting(ctx, "upload_refusal_drain")
	if err != nil {
		def, _ := settings.Lookup("upload_refusal_drain")
		v = settings.Value{Setting: def, Value: def.Default}
	}
	return int64(v.Bytes())
}
