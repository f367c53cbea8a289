module github.com/xfsq/xfsq

go 1.26.8

require (
	github.com/prometheus/procfs v0.23.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
)
