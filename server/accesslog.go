package server

import (
	"context"
	"io"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/xfsq/xfsq/internal/jsonfmt"
)

// accessRecord is one line of the access log. The path is the path only:
// a query string is the client's and may hold anything; the token is in a
// header that is never logged, only the name it maps to.
type accessRecord struct {
	at        time.Time
	method    string
	path      string
	status    int
	seconds   float64
	bytes     int64
	token     string
	requestID string
}

// record is r as a slog record: what a logger writes, and what the hand
// formatting must equal.
func (r *accessRecord) record() slog.Record {
	rec := slog.NewRecord(r.at, slog.LevelInfo, "request", 0)
	rec.AddAttrs(slog.String("method", r.method), slog.String("path", r.path),
		slog.Int("status", r.status), slog.Float64("duration_seconds", r.seconds), slog.Int64("bytes", r.bytes),
		slog.String("token", r.token), slog.String("request_id", r.requestID))
	return rec
}

// accessLog writes the access log to a writer as slog's JSONHandler writes
// the same record through a logger: the same keys in the same order,
// spelled the same (TestAccessLineIsSlogs holds the two equal), but
// formatted by hand. Under wrk, slog's generic path (attributes, a
// reflective encoding/json call for the one float) was a tenth of a
// cached admission answer's CPU (docs/benchmarks.md). A line with anything to
// escape, which only a client's odd path or a token's odd name makes, goes
// through slog itself, so escaping is never ours to get wrong.
type accessLog struct {
	w    lockedWriter
	slow slog.Handler // the same writer through slog
}

// lockedWriter serialises the fast lines and slog's onto one writer.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func newAccessLog(w io.Writer) *accessLog {
	lw := lockedWriter{mu: new(sync.Mutex), w: w}
	return &accessLog{w: lw, slow: slog.NewJSONHandler(lw, nil)}
}

var accessLines = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

func (l *accessLog) write(r *accessRecord) {
	buf := accessLines.Get().(*[]byte)
	line, ok := r.appendLine((*buf)[:0])
	if ok {
		l.w.Write(line)
	} else {
		l.slow.Handle(context.Background(), r.record())
	}
	if cap(line) <= 64<<10 { // a client's megabyte path does not stay pooled
		*buf = line
		accessLines.Put(buf)
	}
}

// appendLine appends r as slog's JSONHandler writes it; false when a
// string holds anything JSON escapes (then b is not to be used), or the
// time or the float is one slog writes as an error (a year outside
// 0–9999, NaN).
func (r *accessRecord) appendLine(b []byte) ([]byte, bool) {
	if y := r.at.Year(); y < 0 || y > 9999 {
		return b, false
	}
	b = append(b, `{"time":"`...)
	b = r.at.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","level":"INFO","msg":"request","method":`...)
	var ok bool
	if b, ok = jsonfmt.AppendPlainString(b, r.method); !ok {
		return b, false
	}
	b = append(b, `,"path":`...)
	if b, ok = jsonfmt.AppendPlainString(b, r.path); !ok {
		return b, false
	}
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(r.status), 10)
	if math.IsNaN(r.seconds) || math.IsInf(r.seconds, 0) {
		return b, false // never a duration; slog's own spelling of the error
	}
	b = append(b, `,"duration_seconds":`...)
	b = jsonfmt.AppendFloat(b, r.seconds)
	b = append(b, `,"bytes":`...)
	b = strconv.AppendInt(b, r.bytes, 10)
	b = append(b, `,"token":`...)
	if b, ok = jsonfmt.AppendPlainString(b, r.token); !ok {
		return b, false
	}
	b = append(b, `,"request_id":`...)
	if b, ok = jsonfmt.AppendPlainString(b, r.requestID); !ok {
		return b, false
	}
	return append(b, "}\n"...), true
}
