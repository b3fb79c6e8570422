package beads

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/vibeteam/vibeteam/core/sandbox"
	"github.com/vibeteam/vibeteam/internal/source"
	"github.com/vibeteam/vibeteam/internal/yamlnode"
)

// ConfigFile is the project's vibeteam settings, relative to the base dir.
const ConfigFile = ".vibeteam/config.yaml"

// DefaultBatch is merge.batch when not written.
const DefaultBatch = 4

// DefaultGrimoire runs a bead no rule chose a grimoire for.
const DefaultGrimoire = "implement-bead"

// Config is .vibeteam/config.yaml:
//
//	grimoires:
//	  by_type: {feature: implement-bead, bug: fix-bug}
//	  default: implement-bead
//	notify: notify-send vibeteam "$(jq -r .next)"
//	merge:
//	  gate: go test ./...
//	  batch: 4          # merges gated together by run --ready and land
//	  gate_retries: 1   # a merge red on its own is gated again (flaky tests)
type Config struct {
	ByType  map[string]string
	Default string
	// Notify is the command run when a session ends or needs a person
	// (run --notify sets it for one run): sh -c, the event as JSON on
	// its stdin.
	Notify string
	// Gate is the default merge gate: the command a merge step without a
	// gate of its own (or with gate: true) runs on the merged result.
	Gate string
	// Batch is merge.batch: how many waiting merges a run --ready (or a
	// land of several branches) gates as one candidate; 0 when not
	// written (DefaultBatch).
	Batch int
	// GateRetries is merge.gate_retries: how many more times a merge's
	// gate runs when it is red on its own, before the merge is red.
	GateRetries int
	// Matchers and MatchersDefault are grimoire-matchers.yaml's (see
	// Matcher): .vibeteam's, else .coven's.
	// Sandbox is the project's sandbox: block (nil when not written): the
	// settings of every sandboxed run, and asking for the sandbox.
	Sandbox         *sandbox.Config
	Matchers        []Matcher
	MatchersDefault string
	MatchersFile    string
}

// LoadConfig reads the base dir's config.yaml; a missing file is an empty
// config. Problems are file:line:col errors.
func LoadConfig(baseDir string) (Config, error) {
	var cfg Config
	if err := loadMatchers(baseDir, &cfg); err != nil {
		return cfg, err
	}
	path := filepath.Join(baseDir, ConfigFile)
	data, err := source.Read(path)
	if errors.Is(err, fs.ErrNotExist) {
		return cfg, nil
	}
	if err != nil {
		return cfg, err
	}
	rel := ConfigFile
	var doc yaml.Node
	if err := yamlnode.SafeUnmarshal(data, &doc); err != nil {
		return cfg, yamlnode.SyntaxError(err, rel, data)
	}
	if len(doc.Content) == 0 {
		return cfg, nil
	}
	w := yamlnode.NewWalker(rel, len(data))
	name := func(n *yaml.Node, field string) (string, bool) { return grimoireName(w, n, field) }
	w.Fields(doc.Content[0], "", "", []string{"grimoires", "notify", "merge", "sandbox"}, func(kv yamlnode.Pair) {
		if kv.Key.Value == "sandbox" {
			cfg.Sandbox = sandbox.Parse(w, kv.Val, "sandbox")
			return
		}
		if kv.Key.Value == "notify" {
			cfg.Notify, _ = w.String(kv.Val, "notify")
			return
		}
		if kv.Key.Value == "merge" {
			w.Fields(kv.Val, "merge", "", []string{"gate", "batch", "gate_retries"}, func(kv yamlnode.Pair) {
				switch kv.Key.Value {
				case "batch":
					cfg.Batch, _ = w.Int(kv.Val, "merge.batch", 1, 100)
					return
				case "gate_retries":
					cfg.GateRetries, _ = w.Int(kv.Val, "merge.gate_retries", 0, 10)
					return
				}
				if g, ok := w.String(kv.Val, "merge.gate"); ok && strings.TrimSpace(g) == "" {
					w.Fail(kv.Val, "merge.gate", yamlnode.MsgNotEmpty)
				} else {
					cfg.Gate = g
				}
			})
			return
		}
		w.Fields(kv.Val, "grimoires", "", []string{"by_type", "default"}, func(kv yamlnode.Pair) {
			switch kv.Key.Value {
			case "default":
				cfg.Default, _ = name(kv.Val, "grimoires.default")
			case "by_type":
				// A mapping of issue types to grimoire names.
				pairs, ok := w.Map(kv.Val, "grimoires.by_type", "a mapping of issue types to grimoire names")
				if !ok || pairs == nil {
					return
				}
				cfg.ByType = make(map[string]string, len(pairs))
				for _, t := range pairs {
					if n, ok := name(t.Val, "grimoires.by_type."+t.Key.Value); ok {
						cfg.ByType[t.Key.Value] = n
					}
				}
			}
		})
	})
	w.Errs.Sort()
	return cfg, w.Errs.Err()
}

// CheckName says why name cannot name a grimoire. A bead's label and
// config.yaml choose a grimoire by its name: a file NAME.yaml in the
// project's grimoire folders (.vibeteam/grimoires, ...) or a built-in,
// never a path, which would let whoever edits a bead run any file. So a
// name has no path separator, no ".." and no "." at all: a name with an
// extension is read as a file path by `vibeteam run`.
func CheckName(name string) error {
	const what = "a grimoire is chosen by its name (.vibeteam/grimoires/NAME.yaml, or a built-in), not by a path"
	switch {
	case name == "":
		return errors.New("the grimoire name is empty")
	case filepath.IsAbs(name) || strings.HasPrefix(name, "/"):
		return fmt.Errorf("%q is an absolute path: %s", name, what)
	case strings.ContainsAny(name, `/\`):
		return fmt.Errorf("%q has a path separator: %s", name, what)
	case strings.Contains(name, ".."):
		return fmt.Errorf("%q has \"..\": %s", name, what)
	case strings.Contains(name, "."):
		return fmt.Errorf("%q has a \".\": %s; write the name without .yaml", name, what)
	case strings.IndexFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0:
		return fmt.Errorf("%q has a control character: %s", name, what)
	}
	return nil
}

// Choose is Select for a run: the name chosen must be a name (CheckName).
// A label naming a path is an error naming the bead and the label; the
// config's names are checked when it is loaded.
func Choose(b Bead, cfg Config) (name, rule string, err error) {
	name, rule = Select(b, cfg)
	if err := CheckName(name); err != nil {
		if l, ok := strings.CutPrefix(rule, "label "); ok {
			rule = "label " + printable(l)
		}
		return "", "", fmt.Errorf("bead %s: %s: %v", printable(b.ID()), rule, err)
	}
	return name, rule, nil
}

// printable is s, or s quoted when it holds what a terminal would
// interpret (a bead's text comes from anyone).
func printable(s string) string {
	for _, r := range s {
		if !strconv.IsPrint(r) || r == utf8.RuneError {
			return strconv.Quote(s)
		}
	}
	return s
}

// Select chooses the grimoire for a bead run without a name, and says
// which rule chose it: the bead's grimoire:NAME label, then the first
// matcher of grimoire-matchers.yaml the bead meets (its labels and
// priority), then the config's grimoire for the bead's issue_type, then
// the config's default, then the matchers' default, then implement-bead.
// The name is not checked (see Choose).
func Select(b Bead, cfg Config) (name, rule string) {
	for _, l := range b.Labels() {
		if n, ok := strings.CutPrefix(l, "grimoire:"); ok && strings.TrimSpace(n) != "" {
			return strings.TrimSpace(n), "label " + l
		}
	}
	for _, m := range cfg.Matchers {
		if m.Matches(b) {
			return m.Grimoire, m.Rule()
		}
	}
	if n := cfg.ByType[b.Type()]; n != "" && b.Type() != "" {
		return n, ConfigFile + " grimoires.by_type." + b.Type()
	}
	if cfg.Default != "" {
		return cfg.Default, ConfigFile + " grimoires.default"
	}
	if cfg.MatchersDefault != "" {
		return cfg.MatchersDefault, cfg.MatchersFile + " default"
	}
	return DefaultGrimoire, "the built-in default"
}

// grimoireName reads a grimoire's name at n: a string, not empty, a valid
// name (CheckName); the error goes to w.
func grimoireName(w *yamlnode.Walker, n *yaml.Node, field string) (string, bool) {
	s, ok := w.String(n, field)
	if !ok {
		return "", false
	}
	s = strings.TrimSpace(s)
	if s == "" {
		w.Fail(n, field, yamlnode.MsgNotEmpty)
		return "", false
	}
	if err := CheckName(s); err != nil {
		w.Fail(n, field, "%v", err)
		return "", false
	}
	return s, true
}
