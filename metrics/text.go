package metrics

import (
	"math"
	"strconv"
	"strings"
)

// textWriter appends the Prometheus text exposition format (version 0.0.4)
// of xfsq's per-tree series to one buffer. A root of 1,000 projects has
// about 30,000 of them; built as client_model messages and encoded by
// expfmt they cost several times the library's read (docs/benchmarks.md), here
// a few appends each. Everything else — the Go and process collectors, the
// host, a few dozen series — still goes through expfmt.
//
// With om set it writes OpenMetrics 1.0 instead, which differs for these
// families (gauges and a histogram) only in escaping quotes in HELP.
type textWriter struct {
	b  []byte
	om bool
}

// header starts a family: its HELP and TYPE lines.
func (w *textWriter) header(m Metric) {
	w.b = append(w.b, "# HELP "...)
	w.b = append(w.b, m.Name...)
	w.b = append(w.b, ' ')
	w.b = appendEscaped(w.b, m.Help, w.om)
	w.b = append(w.b, "\n# TYPE "...)
	w.b = append(w.b, m.Name...)
	w.b = append(w.b, ' ')
	w.b = append(w.b, m.Type...)
	w.b = append(w.b, '\n')
}

// treeLabels is a tree's label pairs as the text format spells them,
// escaped once for all of its samples.
func treeLabels(project, area string) string {
	b := []byte(`project="`)
	b = appendEscaped(b, project, true)
	b = append(b, `",area="`...)
	b = appendEscaped(b, area, true)
	return string(append(b, '"'))
}

// treeSample writes name{labels[,extra]} v.
func (w *textWriter) treeSample(name, suffix, labels, extra string, v float64) {
	w.b = append(w.b, name...)
	w.b = append(w.b, suffix...)
	w.b = append(w.b, '{')
	w.b = append(w.b, labels...)
	w.b = append(w.b, extra...)
	w.b = append(w.b, "} "...)
	w.b = appendValue(w.b, v)
	w.b = append(w.b, '\n')
}

// appendValue writes v as expfmt does: integers in full, others in the
// shortest form that reads back the same, and the special values by name.
func appendValue(b []byte, v float64) []byte {
	switch {
	case math.IsNaN(v):
		return append(b, "NaN"...)
	case math.IsInf(v, 1):
		return append(b, "+Inf"...)
	case math.IsInf(v, -1):
		return append(b, "-Inf"...)
	case v == math.Trunc(v) && math.Abs(v) < 1<<53:
		return strconv.AppendInt(b, int64(v), 10)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}

// appendEscaped escapes as the text format asks: backslash and newline in
// HELP, and the double quote too in a label value. Project names are
// [a-z0-9._-] (docs/design/README.md#the-sandbox-root), so the fast path nearly always holds.
func appendEscaped(b []byte, s string, label bool) []byte {
	if !strings.ContainsAny(s, "\\\n\"") {
		return append(b, s...)
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			b = append(b, `\\`...)
		case c == '\n':
			b = append(b, `\n`...)
		case c == '"' && label:
			b = append(b, `\"`...)
		default:
			b = append(b, c)
		}
	}
	return b
}
