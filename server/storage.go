package server

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/inventory"
	"github.com/xfsq/xfsq/sandbox"
)

// storageAPI serves the storage overview and a project's detail. The
// library caches the assembled overview (sandbox.Manager.Overview: reused
// while this host's change mark stands, restamped or assembled again past
// sandbox.DefaultOverviewMaxAge); this keeps that one answer encoded and
// gzipped, with its ETag, so a request from an unlimited caller costs one
// cheap store query and a write of stored bytes — at 10,000 projects the
// answer is megabytes, and gzip of it at each request was most of one.
type storageAPI struct {
	m *sandbox.Manager

	mu       sync.Mutex
	overview taggedAnswer // the whole overview
	summary  taggedAnswer // its summary
	// projects is the overview's projects encoded, kept while the library
	// restamps the overview around the same slice of them.
	projects struct {
		of   *sandbox.ProjectOverview // the slice's first element
		n    int
		json []byte
	}
}

// taggedAnswer is one encoded answer of an overview: its body, the body
// gzipped, its ETag.
type taggedAnswer struct {
	of         *sandbox.Overview // what it was encoded from
	body, gzip []byte
	etag       string
}

func newStorageAPI(root *sandbox.Root) (*storageAPI, error) {
	return &storageAPI{m: root.Manager}, nil
}

// Overview answers GET /v1/workspace/storage: every project the caller
// may see, from the cached overview; ?refresh=1 snapshots the trees the
// caller may see first (one walk per scope at a time, and none again
// within the refresh_window setting: project.OverviewOptions). The ETag is over the body
// the caller gets, so If-None-Match answers 304 until a figure changes.
func (a *storageAPI) Overview(w http.ResponseWriter, r *http.Request) error {
	ov, c, err := a.read(r)
	if err != nil {
		return err
	}
	if c.Projects == nil {
		t, err := a.encodedOverview(ov)
		if err != nil {
			return err
		}
		writeTagged(w, r, t)
		return nil
	}
	// A limited reader's own view: the others' names and figures must
	// not leak, not even through the ETag or the disk's sums.
	body, etag, err := encodeTagged(sandbox.Scoped(ov, c.Sees))
	if err != nil {
		return err
	}
	writeTagged(w, r, taggedAnswer{body: body, etag: etag})
	return nil
}

// Summary answers GET /v1/workspace/storage/summary: the overview's disk,
// how many projects the caller may see, and the fullest and the top
// growers of them — what the dashboard's overview page draws, without
// every project's line. ?refresh=1 as for the overview; ETag likewise.
func (a *storageAPI) Summary(w http.ResponseWriter, r *http.Request) error {
	ov, c, err := a.read(r)
	if err != nil {
		return err
	}
	if c.Projects == nil {
		t, err := a.cached(&a.summary, ov, func() (taggedAnswer, error) {
			s := sandbox.SummaryOf(ov, nil)
			body, etag, err := encodeTagged(&s)
			return taggedAnswer{body: body, etag: etag}, err
		})
		if err != nil {
			return err
		}
		writeTagged(w, r, t)
		return nil
	}
	s := sandbox.SummaryOf(sandbox.Scoped(ov, c.Sees), nil)
	body, etag, err := encodeTagged(&s)
	if err != nil {
		return err
	}
	writeTagged(w, r, taggedAnswer{body: body, etag: etag})
	return nil
}

// read is the overview for r's caller: a refresh walks what the caller
// may see, and no more.
func (a *storageAPI) read(r *http.Request) (*sandbox.Overview, Caller, error) {
	refresh, err := queryBool(r, "refresh")
	if err != nil {
		return nil, Caller{}, err
	}
	c := CallerOf(r.Context())
	ov, err := a.m.Overview(r.Context(), sandbox.OverviewOptions{Refresh: refresh, Projects: c.Projects})
	return ov, c, err
}

// cached is slot's answer when it was made of ov, else build's, kept in
// slot with its body gzipped once.
func (a *storageAPI) cached(slot *taggedAnswer, ov *sandbox.Overview, build func() (taggedAnswer, error)) (taggedAnswer, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if slot.of == ov {
		return *slot, nil
	}
	t, err := build()
	if err != nil {
		return taggedAnswer{}, err
	}
	if t.gzip, err = gzipOf(t.body); err != nil {
		return taggedAnswer{}, err
	}
	t.of = ov
	*slot = t
	return t, nil
}

// gzipOf is b gzipped as the gzip middleware would (gzipMin and up).
func gzipOf(b []byte) ([]byte, error) {
	if len(b) < gzipMin {
		return nil, nil
	}
	var out bytes.Buffer
	zw := gzipWriters.Get().(*gzip.Writer)
	defer gzipWriters.Put(zw)
	zw.Reset(&out)
	if _, err := zw.Write(b); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	zw.Reset(nil)
	return out.Bytes(), nil
}

// encodedOverview is ov encoded, gzipped and tagged, once per overview;
// the projects' encoding is reused while a restamped overview shares
// them.
func (a *storageAPI) encodedOverview(ov *sandbox.Overview) (taggedAnswer, error) {
	return a.cached(&a.overview, ov, func() (taggedAnswer, error) {
		if len(ov.Projects) == 0 {
			body, etag, err := encodeTagged(ov)
			return taggedAnswer{body: body, etag: etag}, err
		}
		p := &a.projects
		if p.of != &ov.Projects[0] || p.n != len(ov.Projects) {
			b, err := encodeJSON(ov.Projects)
			if err != nil {
				return taggedAnswer{}, err
			}
			p.of, p.n, p.json = &ov.Projects[0], len(ov.Projects), bytes.TrimSuffix(b, []byte("\n"))
		}
		// The rest encoded as writeJSON would, projects last: spliced in.
		head := *ov
		head.Projects = nil
		b, err := encodeJSON(&head)
		if err != nil {
			return taggedAnswer{}, err
		}
		const tail = "null}\n"
		if !bytes.HasSuffix(b, []byte(`"projects":`+tail)) {
			body, etag, err := encodeTagged(ov)
			return taggedAnswer{body: body, etag: etag}, err
		}
		body := make([]byte, 0, len(b)+len(p.json))
		body = append(append(append(body, b[:len(b)-len(tail)]...), p.json...), "}\n"...)
		return taggedAnswer{body: body, etag: tagOf(body)}, nil
	})
}

// encodeJSON is v as writeJSON writes it.
func encodeJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// encodeTagged encodes an answer made of an overview as writeJSON does,
// with its ETag.
func encodeTagged(v any) ([]byte, string, error) {
	body, err := encodeJSON(v)
	if err != nil {
		return nil, "", err
	}
	return body, tagOf(body), nil
}

// tagOf is a body's ETag: a weak one (the body is equivalent, not
// identical) over every member but the first, generated_at, so that an
// overview assembled again with the same figures revalidates with 304.
func tagOf(body []byte) string {
	rest := body
	if i := bytes.IndexByte(body, ','); bytes.HasPrefix(body, []byte(`{"generated_at":`)) && i > 0 {
		rest = body[i:]
	}
	sum := sha256.Sum256(rest)
	return `W/"` + hex.EncodeToString(sum[:16]) + `"`
}

// writeTagged answers with a JSON body and its ETag, or 304 when the
// request's If-None-Match names that tag; gzipped from the stored bytes
// when the answer has them and the request accepts gzip.
func writeTagged(w http.ResponseWriter, r *http.Request, t taggedAnswer) {
	h := w.Header()
	h.Set("ETag", t.etag)
	// Another token may see another body at the same URL.
	h.Set("Vary", "Authorization")
	// A JSON answer is gzipped for a client asking (the stored gzip, or
	// the middleware's once big enough): the 200 varies with
	// Accept-Encoding, and the 304 must name what the 200 would (RFC 9110
	// §15.4.5), whatever this client accepts.
	vary(h, "Accept-Encoding")
	h.Set("Cache-Control", "private, no-cache")
	if inm := r.Header.Get("If-None-Match"); inm != "" && etagMatches(inm, t.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", "application/json")
	body := t.body
	if t.gzip != nil && r.Method != http.MethodHead && acceptsGzip(r.Header.Get("Accept-Encoding")) {
		body = t.gzip
		h.Set("Content-Encoding", "gzip")
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	w.Write(body)
}

// etagMatches is If-None-Match's weak comparison (RFC 9110 §13.1.2).
func etagMatches(header, etag string) bool {
	etag = strings.TrimPrefix(etag, "W/")
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == "*" || t == etag {
			return true
		}
	}
	return false
}

// Project answers GET /v1/workspace/storage/projects/{id}: the project's
// trees with usage and limits, each tree of sizes and mtimes to ?depth=
// (default 3, at most 8) and its largest files, from the last snapshot;
// a tree never snapshotted has "tree": null and "snapshot_at": null.
func (a *storageAPI) Project(w http.ResponseWriter, r *http.Request) error {
	depth := 0
	v, err := queryOne(r, "depth")
	if err != nil {
		return err
	}
	if v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n == 0 { // an explicit 0 is out of range, not the default
			return errkind.New(errkind.Input, fmt.Errorf("depth %q: use a whole number from 1 to %d", v, inventory.MaxDepth))
		}
		depth = n
	}
	d, err := a.m.ProjectStorage(r.Context(), r.PathValue("id"), depth)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, d.BackendOnce())
	return nil
}

// warm encodes the overview Manager.Warm assembled, so that the first
// overview requests write bytes instead of queueing behind one encoding.
func (a *storageAPI) warm(ov *sandbox.Overview) error {
	_, err := a.encodedOverview(ov)
	return err
}
