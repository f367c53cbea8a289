// Package apiv1 is the wire of xfsq's HTTP API (/v1, server/openapi.json):
// the request, response and problem types that the server encodes and
// decodes and the Go client sends and reads, declared once.
//
// It is a leaf: it imports nothing of xfsq but units (a request's "10GiB"),
// so that a program that only talks to a server links the standard library
// and this, never the store, its drivers, the kernel backend or the Docker
// SDK (internal/layering holds that). The library's own result types
// (project.Project, files.PutResult, …) marshal to exactly these shapes: a
// server test holds each pair field for field, so a change to one that the
// other does not follow fails there, not at a client.
package apiv1
