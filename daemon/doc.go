// Package daemon is what runs beside the HTTP server in xfsq serve and is
// not HTTP: the scheduled passes' clock (Passes), the token file and its
// reload (TokenFile, which answers the server's Tokens), the metrics token
// file, the keeping of the journal's checkpoint (JournalCheckpoints), and
// the buffer that batches the process's log writes (LogBuffer).
// cmd/xfsq's serve command composes it with package server.
//
// It decides nothing about a pass (the library does), never serves or
// routes a request, and never logs, echoes or journals a token.
package daemon
