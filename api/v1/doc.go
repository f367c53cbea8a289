// Package apiv1 is the wire of xfsq's HTTP API (/v1, server/openapi.json):
// the request, response and problem types that the server encodes and
// decodes and the Go client sends and reads, declared once.
//
// It is a leaf: it imports nothing of xfsq but units (a request's "10GiB"),
// so that a program that only talks to a server links the standard library
// and this, never the store, its drivers, the kernel backend or the Docker
// SDK (internal/layering holds that). Where a library result has the
// wire's shape, the library answers these types themselves, by alias
// (sandbox.FleetHosts, sandbox.TreeDiff, sandbox.ProjectHistory,
// sandbox.RemoveResult, health.Report, …), so the shape is declared once.
// The results that keep a type of their own (state a shell must not see,
// methods, other Go names: sandbox.Project, sandbox.TreeStatus, …) marshal
// to exactly these shapes: a server test holds each such pair field for
// field, so a change to one that the other does not follow fails there,
// not at a client.
package apiv1
