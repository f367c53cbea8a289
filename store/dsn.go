package store

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"unicode"
)

// DSN kinds, as Classify tells them apart.
const (
	KindSQLite           = "sqlite"            // a file path
	KindPostgresURL      = "postgres-url"      // postgres:// or postgresql://, any case
	KindPostgresKeywords = "postgres-keywords" // libpq's "host=… dbname=… password=…"
)

// Compiled on first use (see migrate.go).
var (
	// urlScheme is a URL's scheme, as RFC 3986 spells one.
	urlScheme = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]*)://`) })
	// keywordDSN starts with one of libpq's connection keywords and "=".
	keywordDSN = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^\s*(host|hostaddr|port|dbname|user|password|passfile|sslmode|sslcert|sslkey|sslrootcert|` +
			`sslpassword|connect_timeout|application_name|options|service|target_session_attrs|search_path)\s*=`)
	})
	// Where a password can sit in a DSN besides a URL's userinfo: a
	// password query parameter, a password keyword (quoted or not).
	// sslpassword (the client key's passphrase) is as secret as password.
	queryPassword   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)([?&](?:ssl)?password=)[^&#]*`) })
	keywordPassword = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)(\b(?:ssl)?password\s*=\s*)('(?:[^'\\]|\\.)*'?|\S*)`)
	})
)

// Classify says which kind of database dsn names. A URL of any other
// scheme is an error: taken for a SQLite path it would create a file
// named after it, password and all.
func Classify(dsn string) (string, error) {
	// Neither pattern can match without its separator: a SQLite path, as
	// every command of a root with its own store names one, is told
	// without compiling them.
	if !strings.Contains(dsn, "=") && !strings.Contains(dsn, "://") {
		return KindSQLite, nil
	}
	if m := urlScheme().FindStringSubmatch(dsn); m != nil {
		switch strings.ToLower(m[1]) {
		case "postgres", "postgresql":
			return KindPostgresURL, nil
		}
		return "", fmt.Errorf("database %s: unknown scheme %q: use a postgres:// URL, libpq keywords (host=… dbname=…), or the path of a SQLite file", Redact(dsn), m[1])
	}
	if keywordDSN().MatchString(dsn) {
		return KindPostgresKeywords, nil
	}
	return KindSQLite, nil
}

// IsPostgres reports whether dsn names a PostgreSQL database.
func IsPostgres(dsn string) bool {
	k, err := Classify(dsn)
	return err == nil && k != KindSQLite
}

// Redact replaces every password a DSN may hold with ***: in a URL's
// userinfo (parsed or not: a malformed URL is redacted too), in a password
// query parameter, and in a password keyword.
func Redact(dsn string) string {
	if m := urlScheme().FindStringSubmatch(dsn); m != nil {
		// The password runs from the first ':' to the last '@': it may hold
		// '@', '/' or '?' itself when not percent-encoded. Taking too much
		// hides a host; taking too little would show a password.
		out, rest := dsn, dsn[len(m[0]):]
		if at := strings.LastIndex(rest, "@"); at >= 0 {
			if user, _, ok := strings.Cut(rest[:at], ":"); ok && !strings.ContainsAny(user, "/?#") {
				out = m[0] + user + ":***" + rest[at:]
			}
		}
		return queryPassword().ReplaceAllString(out, "${1}***")
	}
	return redactKeywordPasswords(dsn)
}

// redactKeywordPasswords blanks every password keyword's value. An
// unquoted value ends at a space for libpq, but a DSN that was meant to
// hold "password=hunter2 S3cretTail" holds the second half as a word of its
// own: the blank runs on to the next key=.
func redactKeywordPasswords(dsn string) string {
	var out strings.Builder
	last := 0
	for _, m := range keywordPassword().FindAllStringSubmatchIndex(dsn, -1) {
		valueStart, end := m[4], m[5]
		if !strings.HasPrefix(dsn[valueStart:], "'") {
			end = nextKeyword(dsn, end)
		}
		out.WriteString(dsn[last:valueStart])
		out.WriteString("***")
		last = end
	}
	out.WriteString(dsn[last:])
	return out.String()
}

// nextKeyword is where the words after i that are not a key (one holding
// or followed by '=') end.
func nextKeyword(dsn string, i int) int {
	for {
		wordStart := i + len(dsn[i:]) - len(strings.TrimLeftFunc(dsn[i:], unicode.IsSpace))
		if wordStart == len(dsn) {
			return i
		}
		wordEnd := len(dsn)
		if n := strings.IndexFunc(dsn[wordStart:], unicode.IsSpace); n >= 0 {
			wordEnd = wordStart + n
		}
		word := dsn[wordStart:wordEnd]
		if strings.Contains(word, "=") || strings.HasPrefix(strings.TrimLeftFunc(dsn[wordEnd:], unicode.IsSpace), "=") {
			return i
		}
		i = wordEnd
	}
}

// secrets are the passwords dsn holds, as written and as decoded, for
// scrubbing them out of errors that quote them in another form.
func secrets(dsn string) []string {
	var out []string
	add := func(s string) {
		s = strings.Trim(s, "'")
		if len(s) >= 1 {
			out = append(out, s)
			if d, err := url.QueryUnescape(s); err == nil && d != s {
				out = append(out, d)
			}
		}
	}
	if m := urlScheme().FindStringSubmatch(dsn); m != nil {
		rest := dsn[len(m[0]):]
		if user, info, ok := strings.Cut(rest, ":"); ok && !strings.ContainsAny(user, "/?#@") {
			if at := strings.LastIndex(info, "@"); at >= 0 {
				add(info[:at])
			}
			if first, _, ok := strings.Cut(info, "@"); ok {
				add(first)
			}
		}
		for _, q := range queryPassword().FindAllStringSubmatch(dsn, -1) {
			add(q[0][len(q[1]):])
		}
	}
	for _, k := range keywordPassword().FindAllStringSubmatch(dsn, -1) {
		add(k[2])
	}
	return out
}

// scrub is err with the password of every DSN its message quotes blanked
// out, where it stands as the DSN's password (a URL's userinfo, a password
// keyword or query parameter): dsn's own as written and decoded, and any
// other's by its form. The same text elsewhere stays: with the password
// "xfsq" a message naming xfsq must still read. The result does not wrap
// err: a wrapped error keeps the original text reachable for whoever
// prints it.
func scrub(err error, dsn string) error {
	if err == nil {
		return nil
	}
	msg := redactQuotedDSNs(err.Error(), secrets(dsn))
	if msg == err.Error() {
		return err
	}
	return errors.New(msg)
}

// redactQuotedDSNs blanks the password fields of the DSNs msg quotes.
// A known secret is matched whole first, since it may hold what ends a
// field by its form (a space, '@', '/').
func redactQuotedDSNs(msg string, secrets []string) string {
	for _, s := range secrets {
		msg = strings.ReplaceAll(msg, ":"+s+"@", ":***@")
	}
	msg = quotedUserinfo().ReplaceAllString(msg, "${1}***@")
	msg = quotedQueryPassword().ReplaceAllString(msg, "${1}***")
	return keywordPassword().ReplaceAllString(msg, "${1}***")
}

// quotedQueryPassword is a password query parameter within a message,
// which ends it at a space or a quote as well.
var quotedQueryPassword = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)([?&](?:ssl)?password=)[^&#\s"']*`)
})

// quotedUserinfo is a URL's user:password@ within a message.
var quotedUserinfo = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://[^\s"'/?#@:]*:)[^\s"'/?#@]*@`)
})

// postgresDSN is dsn as lib/pq reads it: pq takes a URL only when its
// scheme is written in lower case, and would read POSTGRES://… as keywords.
// A URL that does not parse is refused here, without the parser's message,
// which quotes the URL, password included.
func postgresDSN(dsn, kind string) (string, error) {
	if kind == KindPostgresKeywords {
		if problem := keywordSyntaxProblem(dsn); problem != "" {
			return "", fmt.Errorf("database %s is not valid libpq keywords: %s", Redact(dsn), problem)
		}
		return dsn, nil
	}
	if kind != KindPostgresURL {
		return dsn, nil
	}
	m := urlScheme().FindStringSubmatch(dsn)
	dsn = strings.ToLower(m[1]) + dsn[len(m[1]):]
	if _, err := url.Parse(dsn); err != nil {
		return "", fmt.Errorf("database %s is not a valid PostgreSQL URL: write it postgres://USER:PASSWORD@HOST:PORT/DB?sslmode=… with special characters in the password percent-encoded", Redact(dsn))
	}
	return dsn, nil
}

// keywordSyntaxProblem says what keeps libpq from reading dsn as keywords
// (as lib/pq's parser does), or "". lib/pq's own message quotes the word it
// stopped at, which is half a password when the value held a space.
func keywordSyntaxProblem(dsn string) string {
	const quoteIt = "quote a value that holds a space, a quote or a backslash: password='…' (\\' and \\\\ inside the quotes)"
	s := []rune(dsn)
	i := 0
	skipSpaces := func() {
		for i < len(s) && unicode.IsSpace(s[i]) {
			i++
		}
	}
	for {
		skipSpaces()
		if i == len(s) {
			return ""
		}
		for i < len(s) && !unicode.IsSpace(s[i]) && s[i] != '=' {
			i++
		}
		skipSpaces()
		if i == len(s) || s[i] != '=' {
			return "a word without \"=\" stands where a key=value should: " + quoteIt
		}
		i++
		skipSpaces()
		if i == len(s) {
			return ""
		}
		if s[i] != '\'' {
			for i < len(s) && !unicode.IsSpace(s[i]) {
				if s[i] == '\\' {
					i++
					if i == len(s) {
						return "it ends in a backslash: " + quoteIt
					}
				}
				i++
			}
			continue
		}
		for i++; ; i++ {
			if i >= len(s) {
				return "a quoted value is never closed: end it with ' (\\' for a quote inside it)"
			}
			if s[i] == '\\' {
				i++
			} else if s[i] == '\'' {
				i++
				break
			}
		}
	}
}
