package egress

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

func tlsConfig(roots *x509.CertPool) *tls.Config { return &tls.Config{RootCAs: roots} }

func rootsOf(u *upstream) *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(u.Certificate())
	return pool
}

// rawConnect sends a CONNECT for target to the proxy at addr (host:port)
// and returns the status and body of its answer.
func rawConnect(t *testing.T, addr, target string) (int, string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		return resp.StatusCode, ""
	}
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// An allowed host is reached, over plain http (absolute URI) and over TLS
// (CONNECT), with no refusal.
func TestAllowedHostIsReached(t *testing.T) {
	plain, secure := newUpstream(t, false), newUpstream(t, true)
	plainHP, _ := plain.hostPort(t)
	secureHP, _ := secure.hostPort(t)
	proxyURL, ref := startProxy(t, Config{Allow: rules(t, plainHP, secureHP)})

	c := viaProxy(t, proxyURL, rootsOf(secure))
	if code, body := get(t, c, plain.URL+"/a"); code != 200 || body != "hello from /a" {
		t.Errorf("plain http: %d %q", code, body)
	}
	if code, body := get(t, c, secure.URL+"/b"); code != 200 || body != "hello from /b" {
		t.Errorf("https through CONNECT: %d %q", code, body)
	}
	if plain.hits() != 1 || secure.hits() != 1 {
		t.Errorf("hits: plain %d, secure %d", plain.hits(), secure.hits())
	}
	ref.none(t)
}

// A host that is not allowed is never reached: the client gets 403 with
// the sentence naming the host and the key to add, and an event reports
// it, for CONNECT and for plain http.
func TestNotAllowedHostIsRefused(t *testing.T) {
	allowed, other := newUpstream(t, false), newUpstream(t, true)
	allowedHP, _ := allowed.hostPort(t)
	otherHP, otherPort := other.hostPort(t)
	proxyURL, ref := startProxy(t, Config{Allow: rules(t, allowedHP)})
	proxyAddr := strings.TrimPrefix(proxyURL, "http://")

	code, body := rawConnect(t, proxyAddr, otherHP)
	want := fmt.Sprintf("vibeteam sandbox: host %s is not allowed; add it under sandbox.allow", otherHP)
	if code != http.StatusForbidden || !strings.Contains(body, want) {
		t.Errorf("CONNECT: %d %q, want 403 %q", code, body, want)
	}
	if r := ref.next(t); r.Host != "127.0.0.1" || r.Port != otherPort || r.Reason != ReasonNotAllowed || r.Method != "CONNECT" {
		t.Errorf("refusal %+v", r)
	}

	c := viaProxy(t, proxyURL, rootsOf(other))
	if _, _, err := getErr(c, other.URL+"/secret"); err == nil || !strings.Contains(err.Error(), "Forbidden") {
		t.Errorf("https client: err %v, want the proxy's 403", err)
	}
	ref.next(t)
	plainURL := "http://" + otherHP + "/secret" // the TLS server, asked in plain http
	if code, body := get(t, c, plainURL); code != http.StatusForbidden || !strings.Contains(body, want) {
		t.Errorf("plain http: %d %q", code, body)
	}
	if r := ref.next(t); r.Method != "GET" || r.Port != otherPort {
		t.Errorf("refusal %+v", r)
	}
	if other.hits() != 0 {
		t.Errorf("the refused server was reached %d times", other.hits())
	}
}

// network: none refuses even a listed host; network: all lets an unlisted
// one through.
func TestModesNoneAndAll(t *testing.T) {
	up := newUpstream(t, false)
	hp, port := up.hostPort(t)

	noneURL, ref := startProxy(t, Config{Mode: ModeNone, Allow: rules(t, hp)})
	code, body := get(t, viaProxy(t, noneURL, nil), up.URL+"/x")
	if code != http.StatusForbidden || !strings.Contains(body, "network is none") {
		t.Errorf("none: %d %q", code, body)
	}
	if r := ref.next(t); r.Reason != ReasonNetworkNone || r.Port != port {
		t.Errorf("none: refusal %+v", r)
	}
	if up.hits() != 0 {
		t.Fatal("none: the server was reached")
	}

	allURL, ref := startProxy(t, Config{Mode: ModeAll})
	if code, body := get(t, viaProxy(t, allURL, nil), up.URL+"/y"); code != 200 || body != "hello from /y" {
		t.Errorf("all: %d %q", code, body)
	}
	ref.none(t)
}

func TestRules(t *testing.T) {
	cases := []struct {
		rule, host string
		port       int
		want       bool
	}{
		{"api.anthropic.com:443", "api.anthropic.com", 443, true},
		{"api.anthropic.com:443", "API.Anthropic.com.", 443, true},
		{"api.anthropic.com:443", "api.anthropic.com", 80, false},
		{"api.anthropic.com", "api.anthropic.com", 443, true},
		{"api.anthropic.com", "api.anthropic.com", 8443, false},
		{"*.googleapis.com:443", "generativelanguage.googleapis.com", 443, true},
		{"*.googleapis.com:443", "a.b.googleapis.com", 443, true},
		{"*.googleapis.com:443", "googleapis.com", 443, false},
		{"*.googleapis.com:443", "evilgoogleapis.com", 443, false},
		{"localhost:*", "localhost", 9999, true},
		{"[::1]:8080", "::1", 8080, true},
		{"127.0.0.1:8080", "127.0.0.2", 8080, false},
	}
	for _, c := range cases {
		r, err := ParseRule(c.rule)
		if err != nil {
			t.Fatalf("%s: %v", c.rule, err)
		}
		if got := r.Allows(c.host, c.port); got != c.want {
			t.Errorf("%s allows %s:%d = %v, want %v", c.rule, c.host, c.port, got, c.want)
		}
	}
	for _, bad := range []string{"", "host:0", "host:70000", "host:http", "*:443", "http://x:1", "a/b:1"} {
		if _, err := ParseRule(bad); err == nil {
			t.Errorf("ParseRule(%q) accepted", bad)
		}
	}
	if _, err := ParseMode("some"); err == nil {
		t.Error(`ParseMode("some") accepted`)
	}
}
