package server

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	apiv1 "github.com/xfsq/xfsq/api/v1"
	"github.com/xfsq/xfsq/area"
	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/files"
	"github.com/xfsq/xfsq/sandbox"
)

// filesAPI serves /v1/workspace/storage/projects/{id}/files/{path...}
// over the file layer the CLI's `xfsq files` uses: every path goes through
// files.Clean (files.CleanNew for a new name) and is resolved beneath the
// project tree, so an HTTP client can reach exactly what `xfsq files` can.
type filesAPI struct {
	files *files.Layer // for reads; layer gives one for writes
}

func newFilesAPI(root *sandbox.Root) *filesAPI {
	return &filesAPI{files: root.Files()}
}

// layer is the file layer with the settings in force now (max_file_bytes,
// root_budget, reservation_ttl): another process may have changed them
// since the server started.
func (a *filesAPI) layer(r *http.Request) (*files.Layer, error) {
	return a.files.ForWrites(r.Context())
}

// A listing answers at most maxListEntries entries (defaultListEntries
// unless ?limit= asks otherwise), in pages by ?cursor=: a tenant controls
// how many names its directories hold, and one request must not make the
// server, shared by every project, hold millions of them.
const (
	defaultListEntries = 1000
	maxListEntries     = 10000
)

// listCursor is the name a listing's ?cursor= says to start after.
func listCursor(r *http.Request) (string, error) {
	v, err := queryOne(r, "cursor")
	if err != nil {
		return "", err
	}
	b, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil {
		return "", errkind.New(errkind.Input, errors.New("query parameter cursor is not one a listing gave: use its next_cursor as is"))
	}
	return string(b), nil
}

// listLimit is the ?limit= of a listing.
func listLimit(r *http.Request) (int, error) {
	v, err := queryOne(r, "limit")
	if err != nil {
		return 0, err
	}
	if v == "" {
		return defaultListEntries, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxListEntries {
		return 0, errkind.New(errkind.Input, fmt.Errorf("query parameter limit=%q: use 1 to %d", v, maxListEntries))
	}
	return n, nil
}

// Get answers a directory with its listing (JSON) and a regular file with
// its content, with Range, ETag/If-None-Match and Last-Modified as
// http.ServeContent does them, over the descriptor files.Layer.Open checked.
func (a *filesAPI) Get(w http.ResponseWriter, r *http.Request) error {
	area, err := areaOf(r)
	if err != nil {
		return err
	}
	name, p := r.PathValue("id"), r.PathValue("path")
	l := a.files // reads need none of the write settings
	f, e, err := l.Open(r.Context(), name, area, p)
	if err != nil {
		return err
	}
	if f == nil {
		limit, err := listLimit(r)
		if err != nil {
			return err
		}
		after, err := listCursor(r)
		if err != nil {
			return err
		}
		entries, more, err := l.ListPage(r.Context(), name, area, p, after, limit)
		if err != nil {
			return err
		}
		clean, _ := files.Clean(p)
		out := apiv1.Listing{Project: name, Area: areaName(area), Path: clean, Entries: make([]apiv1.Entry, len(entries))}
		for i, e := range entries {
			out.Entries[i] = apiv1.Entry{Name: e.Name, Type: e.Type, SizeBytes: e.Size, ModifiedAt: e.ModTime}
		}
		if more && len(entries) > 0 {
			out.NextCursor = base64.RawURLEncoding.EncodeToString([]byte(entries[len(entries)-1].Name))
		}
		writeJSON(w, http.StatusOK, out)
		return nil
	}
	defer f.Close()
	serveOpened(w, r, f, e)
	return nil
}

// serveOpened serves the file Open checked as it was then: its size and
// mtime are the validators', so the content is cut at that size
// (ServeContent would otherwise seek to the end and serve what a tenant
// appended since under the old ETag, Content-Length and Content-Range).
func serveOpened(w http.ResponseWriter, r *http.Request, f *os.File, e files.Entry) {
	h := w.Header()
	// Tenant bytes, served from the dashboard's origin: never rendered,
	// never sniffed into HTML or script.
	h.Set("Content-Type", "application/octet-stream")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "sandbox; default-src 'none'")
	h.Set("Content-Disposition", ContentDisposition(e.Name))
	// Another file at the name, or this one changed, is another validator.
	h.Set("ETag", fmt.Sprintf(`"%x-%x-%x"`, e.Ino, e.Size, e.ModTime.UnixNano()))
	http.ServeContent(w, r, "", e.ModTime, io.NewSectionReader(f, 0, e.Size))
}

// Put writes the body to the path: admitted first (a Content-Length over
// the tree's allowance is refused, 507, or over max_file_bytes, 413, before
// a byte is read), streamed to a temporary file and put in place only once
// complete, so the old file stays as it was on any refusal or abort. A body
// of unknown length (chunked) is read at most to its allowance plus one
// byte. 201 for a new file, 200 for a replaced one.
func (a *filesAPI) Put(w http.ResponseWriter, r *http.Request) error {
	if r.ContentLength == 0 && r.Header.Get("Content-Length") == "" && len(r.TransferEncoding) == 0 {
		return errkind.New(errkind.Input, errors.New("an upload needs a Content-Length header or a chunked body"))
	}
	area, err := areaOf(r)
	if err != nil {
		return err
	}
	l, err := a.layer(r)
	if err != nil {
		return err
	}
	res, err := l.Put(r.Context(), r.PathValue("id"), area, r.PathValue("path"), r.Body, r.ContentLength)
	if err != nil {
		return err
	}
	status := http.StatusCreated
	if res.Replaced {
		status = http.StatusOK
	}
	writeJSON(w, status, res)
	return nil
}

// Delete removes the path, journalled as `files rm` journals it; a
// directory only with ?recursive=1.
func (a *filesAPI) Delete(w http.ResponseWriter, r *http.Request) error {
	recursive, err := queryBool(r, "recursive")
	if err != nil {
		return err
	}
	area, err := areaOf(r)
	if err != nil {
		return err
	}
	l := a.files
	res, err := l.Remove(r.Context(), r.PathValue("id"), area, r.PathValue("path"), files.RemoveOptions{Recursive: recursive})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

// areaOf is the ?area= of a request ("" is the workspace); the library
// validates it.
func areaOf(r *http.Request) (string, error) { return queryOne(r, "area") }

func areaName(a string) string {
	if a == "" {
		return area.Workspace
	}
	return a
}

// ContentDisposition is a header that makes the browser save the file
// under its name, whatever the name holds: the quoted fallback keeps only
// printable ASCII other than quote and backslash (the rest become "_"), and
// filename* (RFC 5987/6266) carries the name percent-encoded, so no raw
// control character, quote or non-ASCII byte ever reaches the header. In
// filename* too, what would make the saved name lie or break a line —
// control and format characters (a bidi override shows "x\u202etxt.exe"
// as "xexe.txt"), line separators, bytes that are not UTF-8 — becomes "_":
// a tenant names the file, an operator's browser saves it.
func ContentDisposition(name string) string {
	var plain, printable strings.Builder
	for _, r := range name {
		if r >= 0x20 && r < 0x7f && r != '"' && r != '\\' {
			plain.WriteRune(r)
		} else {
			plain.WriteByte('_')
		}
		if r == utf8.RuneError || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == 0x2028 || r == 0x2029 {
			printable.WriteByte('_')
		} else {
			printable.WriteRune(r)
		}
	}
	var enc strings.Builder
	name = printable.String()
	for i := 0; i < len(name); i++ {
		c := name[i]
		if isAttrChar(c) {
			enc.WriteByte(c)
		} else {
			fmt.Fprintf(&enc, "%%%02X", c)
		}
	}
	return `attachment; filename="` + plain.String() + `"; filename*=UTF-8''` + enc.String()
}

// isAttrChar is RFC 5987's attr-char: what filename* may carry unencoded.
func isAttrChar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!#$&+-.^_`|~", c) >= 0
}
