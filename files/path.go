package files

import (
	"fmt"
	"path"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/xfsq/xfsq/errkind"
)

// PathError is a path refused before anything was touched.
type PathError struct {
	Path   string
	Reason string
	Fix    errkind.Hint // what to do instead, when there is a way
}

func (e *PathError) Error() string { return fmt.Sprintf("path %q refused: %s", e.Path, e.Reason) }

// Hint is what to do instead (errkind.HintOf), kept beside the message.
func (e *PathError) Hint() errkind.Hint { return e.Fix }

// Kind: a refused path is bad input, never a failure to retry.
func (e *PathError) Kind() errkind.Kind { return errkind.Input }

// Limits of a path, as Linux has them.
const (
	maxPathBytes = 4096
	maxNameBytes = 255
)

// tempPrefix names xfsq's temporary files; callers may not use it.
const tempPrefix = TempPrefix

// Clean checks a path given relative to a tree and returns it cleaned; "."
// is the tree itself. It refuses what could leave the tree or confuse a
// syscall: absolute paths, "..", NUL bytes, overlong names. Symlinks are
// the business of os.Root when the path is opened.
func Clean(p string) (string, error) {
	refuse := func(reason string) (string, error) { return "", &PathError{Path: p, Reason: reason} }
	switch {
	case strings.ContainsRune(p, 0):
		return refuse("it contains a NUL byte")
	case len(p) > maxPathBytes:
		return refuse(fmt.Sprintf("it is longer than %d bytes", maxPathBytes))
	case strings.HasPrefix(p, "/"):
		return refuse("it is absolute; give it relative to the project tree")
	}
	for _, part := range strings.Split(p, "/") {
		switch {
		case part == "..":
			return refuse(`it contains ".."; paths stay inside the project tree`)
		case len(part) > maxNameBytes:
			return refuse(fmt.Sprintf("a name in it is longer than %d bytes", maxNameBytes))
		case strings.HasPrefix(part, tempPrefix):
			return refuse("names starting with " + tempPrefix + " are xfsq's temporary files")
		}
	}
	if p == "" {
		return ".", nil
	}
	return path.Clean(p), nil
}

// CleanNew is Clean for a path a write may create. It also refuses control
// characters (newlines, escapes, C1 codes), format characters (a bidi
// override makes "x\u202etxt.exe" read as "xexe.txt"), line separators and
// bytes that are not UTF-8 (a raw 0x9b is CSI to an 8-bit terminal, and
// JSON can carry such a name only as U+FFFD): a name holding them forges
// lines or names in listings, the journal and every operator's terminal.
// Existing names are not refused by Clean, so such a file can still be
// read and removed.
func CleanNew(p string) (string, error) {
	c, err := Clean(p)
	if err != nil {
		return c, err
	}
	if strings.HasSuffix(p, "/") {
		return "", &PathError{Path: p, Reason: "it ends in /, as a directory's path does; name the file to write"}
	}
	if !utf8.ValidString(p) {
		return "", &PathError{Path: p, Reason: "it is not UTF-8; new names take printable UTF-8 characters only"}
	}
	if i := strings.IndexFunc(p, unicode.IsControl); i >= 0 {
		return "", &PathError{Path: p, Reason: fmt.Sprintf("it contains the control character %U; new names take printable UTF-8 characters only", []rune(p[i:])[0])}
	}
	invisible := func(r rune) bool { return unicode.Is(unicode.Cf, r) || r == 0x2028 || r == 0x2029 }
	if i := strings.IndexFunc(p, invisible); i >= 0 {
		return "", &PathError{Path: p, Reason: fmt.Sprintf("it contains the format character %U; new names take printable UTF-8 characters only", []rune(p[i:])[0])}
	}
	return c, nil
}
