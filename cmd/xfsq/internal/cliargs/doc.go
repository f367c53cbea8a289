// Package cliargs reads xfsq's command line into values: where each flag
// goes (Interspersed), the flags several commands share (limits, durations,
// --sort, --force), and the usage errors a command line earns (exit 2).
//
// It owns only the reading of words: it never opens the root, the store or
// a backend, and decides nothing the library decides (a limit's validity,
// a report's filter): what it cannot tell from the words alone it hands on.
package cliargs
