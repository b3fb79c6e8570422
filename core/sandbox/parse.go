package sandbox

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/vibeteam/vibeteam/internal/yamlnode"
)

// Parse reads a sandbox: block at field (e.g. "sandbox", "steps[2].sandbox")
// with w, reporting each problem at its line. A null is an empty block: the
// default sandbox, asked for.
func Parse(w *yamlnode.Walker, n *yaml.Node, field string) *Config {
	cfg := &Config{}
	f := func(key string) string {
		if field == "" {
			return key
		}
		return field + "." + key
	}
	w.Fields(n, field, "a mapping such as { write: [PATH], network: none }", Keys, func(kv yamlnode.Pair) {
		key := kv.Key.Value
		switch key {
		case "write", "hide", "env", "allow":
			list := w.Strings(kv.Val, f(key), w.String)
			for _, s := range list {
				if strings.TrimSpace(s) == "" {
					w.Fail(kv.Val, f(key), "has an empty entry")
				}
			}
			switch key {
			case "write":
				cfg.Write = list
			case "hide":
				cfg.Hide = list
			case "env":
				cfg.Env = list
			case "allow":
				cfg.Allow = list
			}
		case "network", "caches":
			s, ok := w.String(kv.Val, f(key))
			if !ok {
				return
			}
			allowed := []string{NetworkNone, NetworkAllow, NetworkAll}
			if key == "caches" {
				allowed = []string{CachesShared, CachesPrivate}
			}
			if !contains(allowed, s) {
				w.Fail(kv.Val, f(key), "%s", yamlnode.OneOf(s, allowed...))
				return
			}
			if key == "network" {
				cfg.Network = s
			} else {
				cfg.Caches = s
			}
		}
	})
	for _, msg := range cfg.Check() {
		if !strings.HasPrefix(msg, "network:") && !strings.HasPrefix(msg, "caches:") {
			w.Errorf(n, field, "%s", msg)
		}
	}
	return cfg
}

func contains(list []string, s string) bool {
	for _, l := range list {
		if l == s {
			return true
		}
	}
	return false
}

// String is c as YAML's flow style writes it, for messages.
func (c Config) String() string { return fmt.Sprintf("{%s}", c.Summary()) }
