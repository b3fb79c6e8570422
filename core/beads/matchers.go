package beads

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/vibeteam/vibeteam/internal/source"
	"github.com/vibeteam/vibeteam/internal/yamlnode"
)

// MatcherFiles are where a project routes beads to grimoires by their tags
// (labels) and priority, the first that exists: vibeteam's, then coven's
// (the same format).
var MatcherFiles = []string{".vibeteam/grimoire-matchers.yaml", ".coven/grimoire-matchers.yaml"}

// Matcher is one rule of grimoire-matchers.yaml, coven's format:
//
//	matchers:
//	  - grimoire: security-audit
//	    any_tags: ["security", "auth*"]   # one label matches one of them (globs)
//	  - grimoire: urgent-bugfix
//	    any_tags: [bug]
//	    priority: [0, 1]                 # the bead's priority is one of them
//	  - grimoire: implement-with-tests
//	    all_tags: [feature, needs-tests] # every one matched by a label
//	    not_tags: [experimental]         # none matched by a label
//	    priority_range: [1, 3]           # from, to (inclusive)
//	default: implement-bead
//
// Every condition written must hold; the first matcher whose conditions
// hold chooses.
type Matcher struct {
	Grimoire         string
	AnyTags, AllTags []string
	NotTags          []string
	Priority         []int
	PriorityRange    []int // [from, to], or nil
	File             string
	Line, Index      int
}

// Rule names the matcher for "which rule chose": the file, line and index.
func (m Matcher) Rule() string {
	return fmt.Sprintf("%s:%d matchers[%d]", m.File, m.Line, m.Index)
}

// Matches reports whether the bead's labels and priority meet every
// condition of m.
func (m Matcher) Matches(b Bead) bool {
	labels := b.Labels()
	matchOne := func(pattern string) bool {
		return slices.ContainsFunc(labels, func(l string) bool {
			ok, _ := path.Match(pattern, l)
			return ok
		})
	}
	if len(m.AnyTags) > 0 && !slices.ContainsFunc(m.AnyTags, matchOne) {
		return false
	}
	for _, p := range m.AllTags {
		if !matchOne(p) {
			return false
		}
	}
	if slices.ContainsFunc(m.NotTags, matchOne) {
		return false
	}
	if len(m.Priority) > 0 || m.PriorityRange != nil {
		p, ok := priority(b)
		if !ok {
			return false
		}
		if len(m.Priority) > 0 && !slices.Contains(m.Priority, p) {
			return false
		}
		if m.PriorityRange != nil && (p < m.PriorityRange[0] || p > m.PriorityRange[1]) {
			return false
		}
	}
	return true
}

// priority is the bead's priority, a whole number (bd's 0-4).
func priority(b Bead) (int, bool) {
	switch p := b["priority"].(type) {
	case float64:
		if p == float64(int(p)) {
			return int(p), true
		}
	case int:
		return p, true
	case string: // "P1", "1"
		if n, err := strconv.Atoi(strings.TrimPrefix(strings.ToUpper(p), "P")); err == nil {
			return n, true
		}
	}
	return 0, false
}

// loadMatchers reads the first of MatcherFiles that exists into cfg.
func loadMatchers(baseDir string, cfg *Config) error {
	for _, rel := range MatcherFiles {
		data, err := source.Read(filepath.Join(baseDir, rel))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		cfg.MatchersFile = rel
		return parseMatchers(rel, data, cfg)
	}
	return nil
}

func parseMatchers(rel string, data []byte, cfg *Config) error {
	var doc yaml.Node
	if err := yamlnode.SafeUnmarshal(data, &doc); err != nil {
		return yamlnode.SyntaxError(err, rel, data)
	}
	if len(doc.Content) == 0 {
		return nil
	}
	r := matcherReader{w: yamlnode.NewWalker(rel, len(data)), rel: rel}
	w := r.w
	w.Fields(doc.Content[0], "", "", []string{"matchers", "default"}, func(kv yamlnode.Pair) {
		switch kv.Key.Value {
		case "default":
			cfg.MatchersDefault, _ = grimoireName(w, kv.Val, "default")
		case "matchers":
			cfg.Matchers = append(cfg.Matchers, yamlnode.List(w, kv.Val, "matchers", "a list of matchers", r.matcher)...)
		}
	})
	w.Errs.Sort()
	return w.Errs.Err()
}

// matcherReader reads the matchers of a matchers file (rel), its errors
// gathered by w.
type matcherReader struct {
	w   *yamlnode.Walker
	rel string
}

// matcher is the i-th matcher, el, at field; ok is false when it has an
// error.
func (r matcherReader) matcher(i int, el *yaml.Node, field string) (Matcher, bool) {
	w := r.w
	m := Matcher{File: r.rel, Line: w.At(el).Line, Index: i}
	conditions := 0
	seen, ok := w.Fields(el, field, "a matcher (grimoire, any_tags, all_tags, not_tags, priority, priority_range)",
		[]string{"grimoire", "any_tags", "all_tags", "not_tags", "priority", "priority_range"}, func(kv yamlnode.Pair) {
			f := field + "." + kv.Key.Value
			if kv.Key.Value != "grimoire" {
				conditions++
			}
			switch kv.Key.Value {
			case "grimoire":
				m.Grimoire, _ = grimoireName(w, kv.Val, f)
			case "any_tags":
				m.AnyTags = r.globs(kv.Val, f)
			case "all_tags":
				m.AllTags = r.globs(kv.Val, f)
			case "not_tags":
				m.NotTags = r.globs(kv.Val, f)
			case "priority":
				m.Priority = r.priorities(kv.Val, f)
			case "priority_range":
				pr := r.priorities(kv.Val, f)
				if len(pr) != 2 || pr[0] > pr[1] {
					w.Fail(kv.Val, f, "must be [from, to], two priorities from 0 to 4, from ≤ to")
					return
				}
				m.PriorityRange = pr
			}
		})
	_, named := seen["grimoire"]
	switch {
	case !ok:
		return m, false
	case !named:
		w.Fail(el, field, "%s", yamlnode.MissingKey("grimoire"))
		return m, false
	case conditions == 0:
		w.Fail(el, field, "has no condition: give any_tags, all_tags, not_tags, priority or priority_range (default: is the grimoire of every other bead)")
		return m, false
	}
	return m, true
}

// globs is a list of tag glob patterns.
func (r matcherReader) globs(n *yaml.Node, field string) []string {
	list := r.w.Strings(n, field, r.w.String)
	for i, p := range list {
		if _, err := path.Match(p, ""); err != nil {
			r.w.Fail(n, fmt.Sprintf("%s[%d]", field, i), "%q is not a glob pattern: %v", p, err)
		}
	}
	return list
}

// priorities is a list of priorities, 0 to 4.
func (r matcherReader) priorities(n *yaml.Node, field string) []int {
	return yamlnode.List(r.w, n, field, "a list of priorities (0 to 4)", func(_ int, el *yaml.Node, f string) (int, bool) {
		return r.w.Int(el, f, 0, 4)
	})
}
