// Package sandbox computes how a process that runs the repository's or an
// agent's code is fenced in: a bubblewrap argv that wraps its command, and
// the environment it keeps. It never starts anything itself: core/runner
// applies a Plan when it starts a process whose Spec carries one.
package sandbox

import (
	"fmt"
	"slices"
	"strings"
)

// Network settings of a sandbox: block (the names core/sandbox/egress reads).
const (
	NetworkAllow = "allow" // the default: the adapter's hosts and allow:, through the proxy
	NetworkNone  = "none"  // no network at all
	NetworkAll   = "all"   // the host's network, unfenced
)

// Cache settings: the toolchains' build caches are shared with the user
// (writable, the default) or private to the session.
const (
	CachesShared  = "shared"
	CachesPrivate = "private"
)

// Config is a sandbox: block, as written at the top of a workflow or
// grimoire, on a task or step, or in .vibeteam/config.yaml. Its zero value
// is the default sandbox.
type Config struct {
	// Write are paths writable inside besides the working directory.
	Write []string `json:"write,omitempty" yaml:"write"`
	// Hide are paths not visible at all, besides the user's secrets.
	Hide []string `json:"hide,omitempty" yaml:"hide"`
	// Env are names of environment variables kept besides the defaults.
	Env []string `json:"env,omitempty" yaml:"env"`
	// Network is none, allow (default) or all; Allow adds host:port
	// entries to what allow lets through.
	Network string   `json:"network,omitempty" yaml:"network"`
	Allow   []string `json:"allow,omitempty" yaml:"allow"`
	// Caches is shared (default) or private.
	Caches string `json:"caches,omitempty" yaml:"caches"`
}

// Keys are the keys of a sandbox: block, in the order messages list them.
var Keys = []string{"write", "hide", "env", "network", "allow", "caches"}

// IsZero reports whether c sets nothing.
func (c Config) IsZero() bool {
	return len(c.Write) == 0 && len(c.Hide) == 0 && len(c.Env) == 0 && c.Network == "" && len(c.Allow) == 0 && c.Caches == ""
}

// Merge is c with over applied on top: lists add up, a setting over
// gives replaces c's.
func (c Config) Merge(over Config) Config {
	out := Config{
		Write:   appendNew(slices.Clone(c.Write), over.Write),
		Hide:    appendNew(slices.Clone(c.Hide), over.Hide),
		Env:     appendNew(slices.Clone(c.Env), over.Env),
		Allow:   appendNew(slices.Clone(c.Allow), over.Allow),
		Network: c.Network,
		Caches:  c.Caches,
	}
	if over.Network != "" {
		out.Network = over.Network
	}
	if over.Caches != "" {
		out.Caches = over.Caches
	}
	return out
}

func appendNew(to, from []string) []string {
	for _, s := range from {
		if !slices.Contains(to, s) {
			to = append(to, s)
		}
	}
	return to
}

// Check reports what is wrong with c's values, one message per problem,
// each naming its key.
func (c Config) Check() []string {
	var errs []string
	switch c.Network {
	case "", NetworkAllow, NetworkNone, NetworkAll:
	default:
		errs = append(errs, fmt.Sprintf("network: %q is none, allow or all", c.Network))
	}
	switch c.Caches {
	case "", CachesShared, CachesPrivate:
	default:
		errs = append(errs, fmt.Sprintf("caches: %q is shared or private", c.Caches))
	}
	for _, e := range c.Env {
		if e == "" || strings.ContainsAny(e, "= \t") {
			errs = append(errs, fmt.Sprintf("env: %q is not a variable name", e))
		}
	}
	for key, list := range map[string][]string{"write": c.Write, "hide": c.Hide} {
		for _, p := range list {
			if strings.TrimSpace(p) == "" {
				errs = append(errs, key+": an empty path")
			}
		}
	}
	for _, a := range c.Allow {
		if strings.TrimSpace(a) == "" || strings.ContainsAny(a, " /") {
			errs = append(errs, fmt.Sprintf("allow: %q is not host:port", a))
		}
	}
	slices.Sort(errs)
	return errs
}

// NetworkOf is the network setting c asks for (allow when unset).
func (c Config) NetworkOf() string {
	if c.Network == "" {
		return NetworkAllow
	}
	return c.Network
}

// Summary is c as one line, for validate and preview.
func (c Config) Summary() string {
	parts := []string{"network " + c.NetworkOf()}
	if len(c.Allow) > 0 {
		parts = append(parts, "allow "+strings.Join(c.Allow, ","))
	}
	if len(c.Write) > 0 {
		parts = append(parts, "write "+strings.Join(c.Write, ","))
	}
	if len(c.Hide) > 0 {
		parts = append(parts, "hide "+strings.Join(c.Hide, ","))
	}
	if len(c.Env) > 0 {
		parts = append(parts, "env "+strings.Join(c.Env, ","))
	}
	caches := c.Caches
	if caches == "" {
		caches = CachesShared
	}
	parts = append(parts, "caches "+caches)
	return strings.Join(parts, "; ")
}
