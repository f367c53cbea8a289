package server

import (
	"bytes"
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
// while the store's change mark stands and it is younger than
// project.DefaultOverviewMaxAge); this keeps that one answer encoded, with
// its ETag, so a request from an unlimited caller costs one cheap store
// query and a write of the bytes.
type storageAPI struct {
	m *sandbox.Manager

	mu      sync.Mutex
	encoded *sandbox.Overview // what body and etag were encoded from
	body    []byte
	etag    string
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
	refresh, err := queryBool(r, "refresh")
	if err != nil {
		return err
	}
	c := CallerOf(r.Context())
	// A refresh walks what the caller may see, and no more.
	ov, err := a.m.Overview(r.Context(), sandbox.OverviewOptions{Refresh: refresh, Projects: c.Projects})
	if err != nil {
		return err
	}
	var body []byte
	var etag string
	if c.Projects == nil {
		body, etag, err = a.encodedOverview(ov)
	} else {
		// A limited reader's own view: the others' names must not leak,
		// not even through the ETag.
		mine := *ov
		mine.Projects = make([]sandbox.ProjectOverview, 0, len(c.Projects))
		for _, p := range ov.Projects {
			if c.Sees(p.Project) {
				mine.Projects = append(mine.Projects, p)
			}
		}
		body, etag, err = encodeTagged(&mine)
	}
	if err != nil {
		return err
	}
	writeTagged(w, r, body, etag)
	return nil
}

// encodedOverview is ov encoded and tagged, encoded once per overview.
func (a *storageAPI) encodedOverview(ov *sandbox.Overview) ([]byte, string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.encoded == ov {
		return a.body, a.etag, nil
	}
	body, etag, err := encodeTagged(ov)
	if err == nil {
		a.encoded, a.body, a.etag = ov, body, etag
	}
	return body, etag, err
}

// encodeTagged encodes an overview as writeJSON does, with its ETag: a
// weak one (the body is equivalent, not identical) over every member but
// the first, generated_at, so that an overview assembled again with the
// same figures revalidates with 304.
func encodeTagged(ov *sandbox.Overview) ([]byte, string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(ov); err != nil {
		return nil, "", err
	}
	body := b.Bytes()
	rest := body
	if i := bytes.IndexByte(body, ','); bytes.HasPrefix(body, []byte(`{"generated_at":`)) && i > 0 {
		rest = body[i:]
	}
	sum := sha256.Sum256(rest)
	return body, `W/"` + hex.EncodeToString(sum[:16]) + `"`, nil
}

// writeTagged answers with a JSON body and its ETag, or 304 when the
// request's If-None-Match names that tag.
func writeTagged(w http.ResponseWriter, r *http.Request, body []byte, etag string) {
	h := w.Header()
	h.Set("ETag", etag)
	// Another token may see another body at the same URL.
	h.Set("Vary", "Authorization")
	h.Set("Cache-Control", "private, no-cache")
	if inm := r.Header.Get("If-None-Match"); inm != "" && etagMatches(inm, etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", "application/json")
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
	if v := r.URL.Query().Get("depth"); v != "" {
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
	_, _, err := a.encodedOverview(ov)
	return err
}
