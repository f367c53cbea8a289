package server

import (
	"fmt"
	"net"
	"net/http"
	"strings"
)

// TypeMisdirected: a request whose Host names a site this server is not
// (DNS rebinding), refused before any handler runs.
const TypeMisdirected = "https://xfsq.dev/problems/misdirected-request"

// hostPolicy says which Host headers the server answers. A web page the
// operator opens can rebind its own name to 127.0.0.1 and then read the
// open routes (/metrics names every project) with the browser's help; the
// browser sends that page's name as Host, which no operator listed.
type hostPolicy struct {
	names map[string]bool // lower case, no port, no trailing dot
	// anyIP: the server listens on every address (0.0.0.0, ::), so any IP
	// literal may be how a client reached it. An IP literal cannot be
	// rebound: only a name can.
	anyIP bool
}

// loopbackNames are allowed always: the server can be reached by them on
// any host, and a rebinding page cannot send them as its Host.
var loopbackNames = []string{"localhost", "127.0.0.1", "::1"}

// newHostPolicy allows the loopback names, the listen address's host and
// the operator's names (--allowed-hosts).
func newHostPolicy(listen string, allowed []string) (*hostPolicy, error) {
	p := &hostPolicy{names: map[string]bool{}}
	for _, n := range loopbackNames {
		p.names[n] = true
	}
	if listen != "" {
		host, _, err := net.SplitHostPort(listen)
		if err != nil {
			return nil, fmt.Errorf("server: listen address %q: %w", listen, err)
		}
		if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
			p.anyIP = true
		} else {
			p.names[canonicalHost(host)] = true
		}
	}
	for _, n := range allowed {
		name, err := ValidAllowedHost(n)
		if err != nil {
			return nil, err
		}
		if name != "" {
			p.names[name] = true
		}
	}
	return p, nil
}

// ValidAllowedHost checks one name of --allowed-hosts and returns it as it
// is compared: a host name or IP literal, without scheme, port or path.
func ValidAllowedHost(n string) (string, error) {
	n = strings.TrimSpace(n)
	if n == "" {
		return "", nil
	}
	bad := func(why string) error {
		return fmt.Errorf("allowed host %q: %s: give a bare host name such as xfsq.example.com (the port does not matter)", n, why)
	}
	switch {
	case strings.Contains(n, "://"):
		return "", bad("a URL")
	case strings.ContainsAny(n, "/ *?#@"):
		return "", bad("not a host name")
	}
	if net.ParseIP(strings.Trim(n, "[]")) == nil && strings.Contains(n, ":") {
		return "", bad("with a port")
	}
	return canonicalHost(n), nil
}

// canonicalHost is a Host's name as compared: lower case, without the
// brackets of an IPv6 literal or a trailing dot.
func canonicalHost(h string) string {
	h = strings.ToLower(strings.TrimSuffix(strings.Trim(h, "[]"), "."))
	if ip := net.ParseIP(h); ip != nil {
		return ip.String()
	}
	return h
}

// allows says whether a request's Host (with or without port) is one the
// server answers.
func (p *hostPolicy) allows(hostHeader string) bool {
	host := hostHeader
	if h, _, err := net.SplitHostPort(hostHeader); err == nil {
		host = h
	}
	if host == "" {
		return false
	}
	host = canonicalHost(host)
	if p.names[host] {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && (ip.IsLoopback() || p.anyIP)
}

// writeMisdirected refuses a request for a Host the server does not answer.
func writeMisdirected(w http.ResponseWriter, host string) {
	const status = http.StatusMisdirectedRequest
	w.Header().Set("Content-Type", ProblemType)
	w.WriteHeader(status)
	writeBody(w, Problem{Type: TypeMisdirected, Title: http.StatusText(status), Status: status,
		Detail: fmt.Sprintf("this server does not answer for host %q", truncateHost(host)),
		Fix:    "reach it by its listen address or a loopback name, or have the operator allow the name: xfsq serve --allowed-hosts NAME"})
}

// truncateHost keeps a hostile Host from filling the answer.
func truncateHost(h string) string {
	if len(h) > 100 {
		return h[:100] + "…"
	}
	return h
}
