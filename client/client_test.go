package client

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// An answer over what the client reads is an error, never a body cut
// short; a limit reaches the server exactly as given, however large; an
// upload to "/a" is to a, not to a doubled slash the server redirects.
func TestClientSendsAndReadsExactly(t *testing.T) {
	var gotBody, gotPath string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		gotBody, gotPath = string(b), r.URL.Path
		switch {
		case strings.HasSuffix(r.URL.Path, "/big"):
			w.Write(make([]byte, maxAnswer+1))
		case r.Method == "PUT":
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{}`))
		default:
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"project":"omni"}`))
		}
	}))
	defer srv.Close()
	c := New(srv.URL, "tok", srv.Client())
	ctx := context.Background()
	if a, err := c.Raw(ctx, "GET", "/v1/big", nil, nil, nil); err == nil {
		t.Errorf("an answer of %d bytes read as %d bytes without an error", maxAnswer+1, len(a.Body))
	}
	huge := uint64(1<<60 + 1)
	if _, err := c.SetLimits(ctx, "omni", "cache", Limits{}.WithBytesHard(huge)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(gotBody, `"bytes_hard":1152921504606846977`) || !strings.Contains(gotBody, `"area":"cache"`) {
		t.Errorf("PATCH body %s, want bytes_hard 1152921504606846977 exactly and the area", gotBody)
	}
	if _, err := c.Upload(ctx, "omni", "", "/a", strings.NewReader("x"), 1); err != nil {
		t.Fatal(err)
	}
	if gotPath != "/v1/workspace/storage/projects/omni/files/a" {
		t.Errorf("upload of /a went to %s", gotPath)
	}
}
