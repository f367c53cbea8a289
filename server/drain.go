package server

import (
	"context"
	"io"
	"net/http"
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

// refusalDrainTime bounds the drain of a body a handler left unread: a
// client that sends its body whole before reading (Python's urllib, many
// scripts) has it on the wire already, and one that trickles it must not
// hold the connection.
const refusalDrainTime = 2 * time.Second

// drainUnread sends the answer, then reads and discards what the handler
// left of the body, up to the drain limit and for refusalDrainTime at most,
// before net/http closes the connection (statusWriter asked it to). A
// client that writes its whole body before reading would otherwise be reset
// by the close on unread data, and its 507 or 401 lost with it. A client
// that said Expect: 100-continue is drained too (it may have sent its body
// without waiting): a read after the answer's header went out sends no 100
// Continue, and one that waits for it has the answer already.
func (s *Server) drainUnread(w http.ResponseWriter, r *http.Request, b *watchedBody) {
	// A body declared empty has nothing to drain: the drain's setting is
	// not read for it (a store that does not answer would hold the
	// answer of every GET for the read's second).
	if b == nil || b.eof || r.ContentLength == 0 {
		return
	}
	rc := http.NewResponseController(w)
	if rc.Flush() != nil {
		return
	}
	limit := s.drainBound(r.Context())
	if rc.SetReadDeadline(time.Now().Add(refusalDrainTime)) != nil {
		return
	}
	io.CopyN(io.Discard, b, limit)
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
