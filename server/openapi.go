package server

import (
	_ "embed"
	"net/http"
)

// OpenAPI is the OpenAPI 3.1 description of this server's API
// (openapi.json). The server's tests check every answer they get against
// it, so it says what the server does, not what it was meant to do.
//
//go:embed openapi.json
var OpenAPI []byte

// openAPI serves the description. It needs no token: it is the same for
// every caller, is public in the repository, holds no project or host
// data, and a client or a code generator needs it before it holds a token.
func (s *Server) openAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=3600")
	w.Write(OpenAPI)
}
