package server

import "testing"

// TestHostPolicy: loopback names, the listen address and the operator's
// names are answered, with or without port; any other name is not (DNS
// rebinding), nor is an IP literal unless the server listens on every
// address.
func TestHostPolicy(t *testing.T) {
	for _, c := range []struct {
		listen  string
		allowed []string
		host    string
		ok      bool
	}{
		{"127.0.0.1:9742", nil, "127.0.0.1:9742", true},
		{"127.0.0.1:9742", nil, "127.0.0.1", true},
		{"127.0.0.1:9742", nil, "localhost:9742", true},
		{"127.0.0.1:9742", nil, "LOCALHOST.", true},
		{"127.0.0.1:9742", nil, "[::1]:9742", true},
		{"127.0.0.1:9742", nil, "[::1]", true},
		{"127.0.0.1:9742", nil, "127.0.0.2:9742", true}, // all of 127/8 is loopback
		{"127.0.0.1:9742", nil, "rebind.attacker.example", false},
		{"127.0.0.1:9742", nil, "rebind.attacker.example:9742", false},
		{"127.0.0.1:9742", nil, "localhost.attacker.example", false},
		{"127.0.0.1:9742", nil, "", false},
		{"127.0.0.1:9742", nil, "10.0.0.5:9742", false},
		{"127.0.0.1:9742", []string{"xfsq.example.com"}, "XFSQ.example.com:443", true},
		{"127.0.0.1:9742", []string{"xfsq.example.com"}, "other.example.com", false},
		{"10.0.0.5:9742", nil, "10.0.0.5:9742", true},
		{"10.0.0.5:9742", nil, "10.0.0.6:9742", false},
		{"[fd00::5]:9742", nil, "[fd00::5]:9742", true},
		{"storage.internal:9742", nil, "storage.internal:9742", true},
		{"0.0.0.0:9742", nil, "192.0.2.7:9742", true},
		{"0.0.0.0:9742", nil, "[2001:db8::7]:9742", true},
		{"0.0.0.0:9742", nil, "rebind.attacker.example:9742", false},
		{":9742", nil, "192.0.2.7", true},
		{"", nil, "192.0.2.7", false},
	} {
		p, err := newHostPolicy(c.listen, c.allowed)
		if err != nil {
			t.Fatalf("listen %q allowed %q: %v", c.listen, c.allowed, err)
		}
		if got := p.allows(c.host); got != c.ok {
			t.Errorf("listen %q allowed %q: Host %q allowed %v, want %v", c.listen, c.allowed, c.host, got, c.ok)
		}
	}
}

// TestAllowedHostsRefuseWhatIsNoName: a URL, a port or a pattern in
// --allowed-hosts is refused with the form to use, not silently never
// matched.
func TestAllowedHostsRefuseWhatIsNoName(t *testing.T) {
	for _, bad := range []string{"https://xfsq.example.com", "xfsq.example.com:443", "*.example.com", "xfsq.example.com/ui"} {
		if _, err := newHostPolicy("", []string{bad}); err == nil {
			t.Errorf("allowed host %q accepted", bad)
		}
	}
	for _, good := range []string{"xfsq.example.com", "192.0.2.7", "[2001:db8::7]", "2001:db8::7", " spaced.example "} {
		if _, err := newHostPolicy("", []string{good}); err != nil {
			t.Errorf("allowed host %q: %v", good, err)
		}
	}
}
