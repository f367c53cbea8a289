// Package testsupport is only a folder: the packages below it are what
// xfsq's tests share (a fixture root, a database per driver, a real
// kernel, git, mounts, promtool, a racing tenant, the OpenAPI checker, a
// tree's files, what to do when a prerequisite is missing). No library or
// shell imports any of them.
package testsupport
