package daemon

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/csv"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/xfsq/xfsq/errkind"
	"github.com/xfsq/xfsq/sandbox"
	"github.com/xfsq/xfsq/server"
)

// The token file (docs/operations.md#tokens) follows Kubernetes' static token file: one CSV
// line per token, TOKEN,NAME,ROLE[,"PROJECT1,PROJECT2"]. TOKEN may be
// written sha256:HEX so that the file holds only a hash; '#' starts a
// comment line. Only hashes are kept in memory, and no error names a
// token, only the line it is on.

// TokenFileHelp is what --help says of the file's form.
const TokenFileHelp = `one CSV line per token: TOKEN,NAME,ROLE[,"PROJECT1,PROJECT2"]; TOKEN may be sha256:HEX (the SHA-256 of the ` +
	`token, so the file holds no secret); ROLE is reader or operator; the project list limits a reader to those projects; ` +
	`# starts a comment; xfsq token new makes a token and its line`

var tokenNamePattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@:-]{0,63}$`) })

// token is one line of the file: the hash of the secret and who it is.
type token struct {
	hash   [sha256.Size]byte
	caller server.Caller
}

// TokenSet is a parsed token file. It answers who a bearer token is,
// comparing its hash with every entry's in constant time.
type TokenSet struct {
	tokens []token
}

// Len is the number of tokens.
func (s *TokenSet) Len() int {
	if s == nil {
		return 0
	}
	return len(s.tokens)
}

// Lookup is the caller a bearer token belongs to. Every entry is compared,
// match or not, so the time taken says nothing of which (if any) matched.
func (s *TokenSet) Lookup(bearer string) (server.Caller, bool) {
	if s == nil || bearer == "" {
		return server.Caller{}, false
	}
	h := sha256.Sum256([]byte(bearer))
	found := -1
	for i := range s.tokens {
		if subtle.ConstantTimeCompare(h[:], s.tokens[i].hash[:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return server.Caller{}, false
	}
	return s.tokens[found].caller, true
}

// ParseTokens reads a token file's content; source names it in errors.
func ParseTokens(r io.Reader, source string) (*TokenSet, error) {
	cr := csv.NewReader(r)
	cr.Comment = '#'
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	set := &TokenSet{}
	lineOf := map[[sha256.Size]byte]int{}
	bad := func(line int, format string, args ...any) error {
		return errkind.New(errkind.Input, fmt.Errorf("token file %s line %d: %s", source, line, fmt.Sprintf(format, args...)))
	}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				// csv's message names line and column, never the content.
				return nil, bad(pe.Line, "not CSV (%v): use TOKEN,NAME,ROLE[,\"P1,P2\"]", pe.Err)
			}
			return nil, errkind.New(errkind.Input, fmt.Errorf("token file %s: %w", source, err))
		}
		line, _ := cr.FieldPos(0)
		t, err := parseTokenLine(rec)
		if err != nil {
			return nil, bad(line, "%v", err)
		}
		if prev, dup := lineOf[t.hash]; dup {
			return nil, bad(line, "the same token as line %d: give each token one line", prev)
		}
		lineOf[t.hash] = line
		set.tokens = append(set.tokens, t)
	}
	if len(set.tokens) == 0 {
		return nil, errkind.New(errkind.Input, fmt.Errorf("token file %s holds no token: add a line TOKEN,NAME,ROLE", source))
	}
	return set, nil
}

// parseTokenLine reads one line's fields; its error says what is wrong
// with them, never the token.
func parseTokenLine(rec []string) (token, error) {
	var t token
	if len(rec) < 3 || len(rec) > 4 {
		return token{}, fmt.Errorf("%d fields: use TOKEN,NAME,ROLE[,\"P1,P2\"]", len(rec))
	}
	secret, name, role := strings.TrimSpace(rec[0]), strings.TrimSpace(rec[1]), strings.TrimSpace(rec[2])
	switch {
	case secret == "":
		return token{}, fmt.Errorf("the token is empty")
	case strings.Contains(strings.ToUpper(secret), TokenPlaceholder):
		return token{}, fmt.Errorf("the token is the example's placeholder %s: make a token and its line with xfsq token new NAME ROLE", TokenPlaceholder)
	case strings.HasPrefix(secret, "sha256:"):
		b, err := hex.DecodeString(strings.TrimPrefix(secret, "sha256:"))
		if err != nil || len(b) != sha256.Size {
			return token{}, fmt.Errorf("sha256: takes the 64 hex digits of the token's SHA-256 (e.g. printf %%s TOKEN | sha256sum)")
		}
		copy(t.hash[:], b)
		if word, ok := wellKnownHashes[hex.EncodeToString(b)]; ok {
			return token{}, fmt.Errorf("the hash is of the word %q, which anyone can guess (an old example file's): make a token and its line with xfsq token new NAME ROLE", word)
		}
	default:
		if len(secret) < minTokenLen {
			return token{}, fmt.Errorf("the token is shorter than 16 characters: use a long random one (e.g. openssl rand -hex 32)")
		}
		t.hash = sha256.Sum256([]byte(secret))
	}
	if !tokenNamePattern().MatchString(name) {
		return token{}, fmt.Errorf("name %s is invalid: use 1-64 characters of A-Z a-z 0-9 . _ @ : -, starting with a letter or digit", shownField(name))
	}
	t.caller.Name = name
	switch role {
	case "reader":
		t.caller.Role = server.RoleReader
	case "operator":
		t.caller.Role = server.RoleOperator
	default:
		return token{}, fmt.Errorf("role %s: use reader or operator", shownField(role))
	}
	if len(rec) == 4 {
		if t.caller.Role != server.RoleReader {
			return token{}, fmt.Errorf("a project list limits readers only; an operator token sees every project")
		}
		t.caller.Projects = []string{}
		for p := range strings.SplitSeq(rec[3], ",") {
			p = strings.TrimSpace(p)
			if err := sandbox.ValidateName(p); err != nil {
				if len(p) >= minTokenLen { // the name may be a token in the wrong column
					return token{}, fmt.Errorf("project list: a name %s is not a valid project name (1-63 characters of a-z 0-9 . _ -)", shownField(p))
				}
				return token{}, fmt.Errorf("project list: %v", err)
			}
			if !slices.Contains(t.caller.Projects, p) {
				t.caller.Projects = append(t.caller.Projects, p)
			}
		}
	}
	return t, nil
}

// minTokenLen is the shortest token a file may hold.
const minTokenLen = 16

// TokenPlaceholder stands where the example file's tokens go: a file that
// still holds it was copied without making tokens, and is refused.
const TokenPlaceholder = "REPLACE-ME"

// wellKnownHashes are the SHA-256 of the words an earlier example file
// shipped working hashes of; a file copied from it would let anyone in.
var wellKnownHashes = map[string]string{
	"5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8": "password",
	"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08": "test",
	"2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae": "foo",
}

// NewToken makes a random token and the token file line that lets it in
// as name with role (limited to projects, for a reader): the line holds
// only its hash, and is checked as the file's parser would.
func NewToken(name, role string, projects []string) (secret, line string, err error) {
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", "", err
	}
	secret = hex.EncodeToString(raw[:])
	rec := []string{fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(secret))), name, role}
	if len(projects) > 0 {
		rec = append(rec, strings.Join(projects, ","))
	}
	if _, err := parseTokenLine(rec); err != nil {
		return "", "", errkind.New(errkind.Input, err)
	}
	// Checked above: no field holds a quote or a comma of its own.
	line = strings.Join(rec[:3], ",")
	if len(rec) == 4 {
		line += `,"` + rec[3] + `"`
	}
	return secret, line, nil
}

// shownField is a refused NAME, ROLE or project as an error shows it: quoted when
// it is too short to be a token, else only its length, since a line with
// its columns swapped (NAME,TOKEN,ROLE) puts a token there, and errors
// reach the terminal and, on a SIGHUP reload, the log.
func shownField(v string) string {
	if len(v) < minTokenLen {
		return fmt.Sprintf("%q", v)
	}
	return fmt.Sprintf("of %d characters (not shown: it may be a token in the wrong column)", len(v))
}

// LoadTokenFile reads and parses a token file. A file other users may
// read is refused: it holds secrets (or hashes that let a guess be checked).
func LoadTokenFile(path string) (*TokenSet, error) {
	f, err := openSecretFile("token file", "--token-file (or XFSQ_TOKEN_FILE)", path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseTokens(io.LimitReader(f, 16<<20), path)
}

// openSecretFile opens a file of secrets, refusing one that is not a
// regular file or that every user may read; what and flag name it in errors.
func openSecretFile(what, flag, path string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, errkind.WithHint(errkind.Input, fmt.Errorf("%s: %w", what, err), "give "+flag+" a readable file")
	}
	fi, err := f.Stat()
	switch {
	case err != nil:
		err = fmt.Errorf("%s %s: %w", what, path, err)
	case !fi.Mode().IsRegular():
		err = errkind.New(errkind.Input, fmt.Errorf("%s %s is not a regular file", what, path))
	case fi.Mode().Perm()&0o004 != 0:
		err = errkind.WithHint(errkind.Input, fmt.Errorf("%s %s is readable by every user (mode %04o)", what, path, fi.Mode().Perm()),
			"chmod 600 "+path+" (or 640 with a group of its own)")
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// LoadMetricsToken reads the bearer token /metrics requires: the file's
// only content, as Prometheus's authorization.credentials_file reads it,
// so that both can be given the same file.
func LoadMetricsToken(path string) (string, error) {
	f, err := openSecretFile("metrics token file", "--metrics-token-file", path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 4<<10))
	if err != nil {
		return "", fmt.Errorf("metrics token file %s: %w", path, err)
	}
	tok := strings.TrimSpace(string(b))
	if len(tok) < minTokenLen || strings.ContainsAny(tok, " \t\r\n") {
		return "", errkind.WithHint(errkind.Input, fmt.Errorf("metrics token file %s: want one token of at least %d characters on one line, and nothing else", path, minTokenLen),
			"openssl rand -hex 32 > "+path)
	}
	return tok, nil
}

// TokenFile is a token file in force, replaced whole by Reload.
type TokenFile struct {
	path string
	cur  atomic.Pointer[TokenSet]
}

// OpenTokenFile loads the file; it fails if the file is missing or bad.
func OpenTokenFile(path string) (*TokenFile, error) {
	set, err := LoadTokenFile(path)
	if err != nil {
		return nil, err
	}
	f := &TokenFile{path: path}
	f.cur.Store(set)
	return f, nil
}

// Current is the set in force.
func (f *TokenFile) Current() *TokenSet { return f.cur.Load() }

// Lookup is the caller a bearer token belongs to in the set in force:
// a *TokenFile is the server's Tokens, reloaded on SIGHUP.
func (f *TokenFile) Lookup(bearer string) (server.Caller, bool) { return f.Current().Lookup(bearer) }

// Path is the file's path.
func (f *TokenFile) Path() string { return f.path }

// Reload reads the file again. A file that is now missing or bad leaves
// the set in force as it was (a typo must not lock every client out, nor
// let one in), and the error says why; log says what happened either way.
func (f *TokenFile) Reload(log *slog.Logger) error {
	set, err := LoadTokenFile(f.path)
	if err != nil {
		if log != nil {
			log.Error("token file not reloaded; the previous tokens stay in force", "file", f.path, "error", err.Error())
		}
		return err
	}
	f.cur.Store(set)
	if log != nil {
		log.Info("token file reloaded", "file", f.path, "tokens", set.Len())
	}
	return nil
}
