package egress

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Mode is what the proxy lets through besides the model routes.
type Mode string

const (
	// ModeAllowList (the default, also the zero value) lets through only
	// the hosts of Config.Allow.
	ModeAllowList Mode = "allow"
	// ModeNone refuses every host. The model routes still work: they are
	// vibeteam's own, not the agent's choice.
	ModeNone Mode = "none"
	// ModeAll lets every host through.
	ModeAll Mode = "all"
)

// ParseMode reads a mode as a configuration file writes it: "none",
// "all", or "allow" (also "" and "allowlist").
func ParseMode(s string) (Mode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "allow", "allowlist":
		return ModeAllowList, nil
	case "none":
		return ModeNone, nil
	case "all":
		return ModeAll, nil
	}
	return "", fmt.Errorf("network %q: want none, all or allow", s)
}

// Rule is one allowed destination: an exact host or a "*.domain" wildcard
// (any name under domain, not domain itself), and a port (0: any port).
type Rule struct {
	Host     string // lower case, no trailing dot; for a wildcard, the domain after "*."
	Wildcard bool
	Port     int
}

// String is the rule as ParseRule reads it.
func (r Rule) String() string {
	host := r.Host
	if r.Wildcard {
		host = "*." + host
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	port := "*"
	if r.Port != 0 {
		port = strconv.Itoa(r.Port)
	}
	return host + ":" + port
}

// ParseRule reads an allow entry: "host:port", "*.domain:port",
// "[::1]:port", "host:*" (any port), or a bare "host", which means port
// 443: what an agent reaches is nearly always HTTPS, and a bare name
// opening every port would surprise.
func ParseRule(entry string) (Rule, error) {
	s := strings.TrimSpace(entry)
	if s == "" {
		return Rule{}, fmt.Errorf("empty allow entry")
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		// No port (a bare name, or a bare IPv6 literal).
		host, port = strings.Trim(s, "[]"), "443"
	}
	r := Rule{Host: normHost(host)}
	if rest, ok := strings.CutPrefix(r.Host, "*."); ok {
		r.Host, r.Wildcard = rest, true
	}
	if r.Host == "" || strings.ContainsAny(r.Host, "*/ @?#") {
		return Rule{}, fmt.Errorf("allow entry %q: want host:port, *.domain:port or [ipv6]:port", entry)
	}
	if port != "*" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return Rule{}, fmt.Errorf("allow entry %q: port %q is not a number from 1 to 65535 (or *)", entry, port)
		}
		r.Port = n
	}
	return r, nil
}

// ParseRules reads a list of allow entries; the error names the first bad one.
func ParseRules(entries []string) ([]Rule, error) {
	rules := make([]Rule, 0, len(entries))
	for _, e := range entries {
		r, err := ParseRule(e)
		if err != nil {
			return nil, err
		}
		rules = append(rules, r)
	}
	return rules, nil
}

// Allows reports whether the rule admits host:port. host is matched as the
// client named it: the proxy dials that same name, so what was checked is
// what is reached.
func (r Rule) Allows(host string, port int) bool {
	if r.Port != 0 && r.Port != port {
		return false
	}
	host = normHost(host)
	if r.Wildcard {
		return strings.HasSuffix(host, "."+r.Host)
	}
	return host == r.Host
}

func normHost(h string) string {
	return strings.TrimSuffix(strings.ToLower(strings.Trim(h, "[]")), ".")
}

// policy decides a destination: "" lets it through, anything else is the
// reason it is refused.
type policy struct {
	mode  Mode
	rules []Rule
}

func (p policy) refuses(host string, port int) string {
	switch p.mode {
	case ModeAll:
		return ""
	case ModeNone:
		return ReasonNetworkNone
	}
	for _, r := range p.rules {
		if r.Allows(host, port) {
			return ""
		}
	}
	return ReasonNotAllowed
}
