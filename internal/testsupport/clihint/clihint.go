// Package clihint words a field hint as the CLI does (cmd/xfsq's
// flagOf), for the tests that hold a library's hints to the CLI's words.
package clihint

import "strings"

// Flag words a field as the CLI's flag.
func Flag(field string) string {
	if field == "areas" {
		field = "area"
	}
	return "--" + strings.ReplaceAll(field, "_", "-")
}
