package workflow

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/vibeteam/vibeteam/internal/suggest"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/vibeteam/vibeteam/internal/source"
)

// Keys accepted at each level, in the order suggestions prefer them.
var (
	rootKeys  = []string{"id", "goal", "stages"}
	stageKeys = []string{"id", "tasks"}
	taskKeys  = []string{"id", "adapter", "executionMode", "prompt", "extraArgs", "cwd", "env",
		"name", "pendingInputs", "keepAlive", "timeout", "inactivityTimeout"}
)

// LoadFile reads and parses a definition file. A file that cannot be read
// (missing, not a regular file, over source.MaxSize) is an *source.Error
// naming the path; a file with problems is an ErrorList.
func LoadFile(path string, opts LoadOptions) (*Definition, error) {
	data, err := source.Read(path)
	if err != nil {
		return nil, err
	}
	return Parse(data, path, opts)
}

// Parse loads a definition from YAML or JSON. JSON is read with
// encoding/json into the same node tree as YAML, so both report positions and
// problems the same way. filename is used in positions and as
// Definition.Source, and its extension chooses the syntax (see isJSON). On any
// error it returns every problem found (warnings included) as an ErrorList
// and no definition; warnings alone are dropped (see Diagnose).
func Parse(data []byte, filename string, opts LoadOptions) (*Definition, error) {
	def, probs := Diagnose(data, filename, opts)
	if probs.HasErrors() {
		return nil, probs
	}
	return def, nil
}

// Diagnose is Parse for validate: it returns every problem, warnings
// included, and the definition only when none of them is an error.
func Diagnose(data []byte, filename string, opts LoadOptions) (*Definition, ErrorList) {
	p := newParser(filename, len(data))
	root, errs := decode(data, filename)
	if len(errs) > 0 {
		return nil, errs
	}
	def := p.definition(root)
	if def != nil && !p.exhausted {
		p.errs = append(p.errs, check(def, opts, p.pos, p.broken, p.rootPos)...)
	}
	p.errs.sortByPos()
	probs := dedupe(p.errs)
	if probs.HasErrors() || def == nil {
		return nil, probs
	}
	Normalize(def, opts)
	return def, probs
}

// DiagnoseFile is Diagnose on a file. A file that cannot be read is one
// problem without a line, naming the file.
func DiagnoseFile(path string, opts LoadOptions) (*Definition, ErrorList) {
	data, err := source.Read(path)
	if err != nil {
		msg := err.Error()
		var se *source.Error
		if errors.As(err, &se) {
			msg = se.Msg
		}
		return nil, ErrorList{{Pos: Pos{File: path}, Msg: msg}}
	}
	return Diagnose(data, path, opts)
}

// TopLevelKeys returns the keys of the top-level mapping of a YAML or JSON
// file, or nil when it has none or does not parse: enough to tell a workflow
// from another kind of file (an adapter) without loading it.
func TopLevelKeys(data []byte, filename string) []string {
	root, errs := decode(data, filename)
	if len(errs) > 0 || root.Kind != yaml.MappingNode {
		return nil
	}
	keys := make([]string, 0, len(root.Content)/2)
	for i := 0; i+1 < len(root.Content); i += 2 {
		if k := root.Content[i]; k.Kind == yaml.ScalarNode {
			keys = append(keys, k.Value)
		}
	}
	return keys
}

// decode parses data into the root node of its only document.
func decode(data []byte, file string) (*yaml.Node, ErrorList) {
	asJSON, sniffed := isJSON(data, file)
	if !asJSON {
		return decodeYAML(data, file)
	}
	root, errs := decodeJSON(data, file)
	if len(errs) > 0 && sniffed {
		// Not JSON after all; a YAML flow mapping starts with "{" too.
		if yroot, yerrs := decodeYAML(data, file); len(yerrs) == 0 {
			return yroot, nil
		}
	}
	return root, errs
}

// decodeYAML parses YAML data into the root node of its only document.
func decodeYAML(data []byte, file string) (*yaml.Node, ErrorList) {
	empty := ErrorList{{Pos: Pos{File: file, Line: 1, Col: 1}, Msg: "file is empty"}}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, empty
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	switch err := safeDecode(dec, &doc); {
	case err == io.EOF:
		return nil, empty
	case err != nil:
		return nil, ErrorList{yamlSyntaxError(err, file, data)}
	}
	if len(doc.Content) == 0 || isBlank(doc.Content[0]) {
		return nil, empty
	}
	var extra yaml.Node
	switch err := safeDecode(dec, &extra); {
	case err == io.EOF:
	case err != nil:
		return nil, ErrorList{yamlSyntaxError(err, file, data)}
	case len(extra.Content) > 0 && !isBlank(extra.Content[0]):
		n := extra.Content[0]
		return nil, ErrorList{{Pos: Pos{File: file, Line: n.Line, Col: n.Column},
			Msg: "a file holds one workflow; found a second YAML document"}}
	}
	return doc.Content[0], nil
}

// safeDecode turns a panic of the YAML parser into an error: yaml.v3 has
// panicked on malformed input before (CVE-2022-28948), and a bad file must
// never crash the program.
func safeDecode(dec *yaml.Decoder, n *yaml.Node) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml: cannot parse file: %v", r)
		}
	}()
	return dec.Decode(n)
}

// isBlank is a document with no content, as "---" alone gives.
func isBlank(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" && n.Value == ""
}

// parser walks the node tree of a stage workflow. It collects the structural
// problems (unknown keys, wrong types) itself and leaves the semantic ones to
// the checker shared with Validate.
type parser struct {
	file    string
	errs    ErrorList
	rootPos Pos
	pos     map[string]Pos  // field path -> position of the value written for it
	broken  map[string]bool // fields with a structural error already reported

	// Aliases are followed, so a small file can expand to a huge tree
	// ("billion laughs"). The walk stops after maxVisits nodes.
	visits, maxVisits int
	exhausted         bool
	merging           map[*yaml.Node]bool // mappings being merged, to stop "<<" cycles
}

func newParser(file string, size int) *parser {
	return &parser{
		file:      file,
		pos:       map[string]Pos{},
		broken:    map[string]bool{},
		maxVisits: 200_000 + 16*size,
		merging:   map[*yaml.Node]bool{},
	}
}

func (p *parser) at(n *yaml.Node) Pos {
	return Pos{File: p.file, Line: n.Line, Col: n.Column}
}

func (p *parser) errorf(n *yaml.Node, field, format string, args ...any) {
	p.errs = append(p.errs, &Error{Pos: p.at(n), Field: field, Msg: fmt.Sprintf(format, args...)})
}

// fail reports a structural problem of field, and marks it so the semantic
// checks do not report it a second time.
func (p *parser) fail(n *yaml.Node, field, format string, args ...any) {
	p.broken[field] = true
	p.errorf(n, field, format, args...)
}

// deref follows aliases and counts the node against the walk's budget. It
// never returns nil.
func (p *parser) deref(n *yaml.Node) *yaml.Node {
	orig := n
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 64; i++ {
		n = n.Alias
	}
	if n == nil || n.Kind == yaml.AliasNode {
		// An alias without a target; yaml.v3 rejects those, but a null keeps
		// the walk going if it ever does not.
		n = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null"}
		if orig != nil {
			n.Line, n.Column = orig.Line, orig.Column
		}
	}
	p.visits++
	if p.visits > p.maxVisits && !p.exhausted {
		p.exhausted = true
		p.errorf(n, "", "the file expands to more than %d nodes through aliases; write it out or use fewer aliases", p.maxVisits)
	}
	return n
}

func (p *parser) definition(n *yaml.Node) *Definition {
	root := p.deref(n)
	p.rootPos = p.at(root)
	if root.Kind != yaml.MappingNode {
		p.errorf(root, "", `the top level must be a mapping with "id" and "stages"`)
		return nil
	}
	pairs := p.pairs(root, "", true)
	if kindOf(pairs) == KindGrimoire {
		return p.grimoire(pairs)
	}
	def := &Definition{Kind: KindStages, Source: p.file}
	for _, kv := range pairs {
		if p.exhausted {
			break
		}
		switch kv.key.Value {
		case "id":
			def.ID = p.text(kv.val, "id")
		case "goal":
			def.Goal = p.text(kv.val, "goal")
		case "stages":
			def.Steps = p.stages(kv.val, "stages")
		default:
			p.unknownKey(kv.key, "", rootKeys)
		}
	}
	return def
}

func (p *parser) stages(n *yaml.Node, field string) []Step {
	n = p.deref(n)
	p.pos[field] = p.at(n)
	switch {
	case isNull(n):
		return nil
	case n.Kind != yaml.SequenceNode:
		p.fail(n, field, "must be a list of stages")
		return nil
	}
	steps := make([]Step, 0, len(n.Content))
	for i, el := range n.Content {
		if p.exhausted {
			break
		}
		sf := field + "[" + strconv.Itoa(i) + "]"
		el = p.deref(el)
		if el.Kind != yaml.MappingNode {
			p.broken[field] = true
			p.fail(el, sf, `must be a mapping with "id" and "tasks"`)
			continue
		}
		steps = append(steps, p.stage(el, sf))
	}
	return steps
}

func (p *parser) stage(n *yaml.Node, field string) Step {
	p.pos[field] = p.at(n)
	s := Step{Type: StepStage, Pos: p.at(n)}
	for _, kv := range p.pairs(n, field, true) {
		if p.exhausted {
			break
		}
		switch kv.key.Value {
		case "id":
			s.ID = p.text(kv.val, field+".id")
		case "tasks":
			s.Tasks = p.tasks(kv.val, field+".tasks")
		default:
			p.unknownKey(kv.key, field, stageKeys)
		}
	}
	return s
}

func (p *parser) tasks(n *yaml.Node, field string) []Task {
	n = p.deref(n)
	p.pos[field] = p.at(n)
	switch {
	case isNull(n):
		return nil
	case n.Kind != yaml.SequenceNode:
		p.fail(n, field, "must be a list of tasks")
		return nil
	}
	tasks := make([]Task, 0, len(n.Content))
	for i, el := range n.Content {
		if p.exhausted {
			break
		}
		tf := field + "[" + strconv.Itoa(i) + "]"
		el = p.deref(el)
		if el.Kind != yaml.MappingNode {
			p.broken[field] = true
			p.fail(el, tf, `must be a mapping with "id" and "adapter"`)
			continue
		}
		tasks = append(tasks, p.task(el, tf))
	}
	return tasks
}

func (p *parser) task(n *yaml.Node, field string) Task {
	p.pos[field] = p.at(n)
	t := Task{Pos: p.at(n)}
	for _, kv := range p.pairs(n, field, true) {
		if p.exhausted {
			break
		}
		f := field + "." + kv.key.Value
		switch kv.key.Value {
		case "id":
			t.ID = p.text(kv.val, f)
		case "adapter":
			t.Adapter = p.text(kv.val, f)
		case "executionMode":
			t.ExecutionMode = p.text(kv.val, f)
		case "prompt":
			t.Prompt = p.text(kv.val, f)
		case "extraArgs":
			t.ExtraArgs = p.stringList(kv.val, f)
		case "cwd":
			t.Cwd = p.text(kv.val, f)
		case "env":
			t.Env = p.stringMap(kv.val, f)
		case "name":
			t.Name = p.text(kv.val, f)
		case "pendingInputs":
			t.PendingInputs = p.stringList(kv.val, f)
		case "keepAlive":
			t.KeepAlive = p.boolean(kv.val, f)
		case "timeout":
			t.Timeout = p.duration(kv.val, f)
		case "inactivityTimeout":
			t.InactivityTimeout = p.duration(kv.val, f)
		default:
			p.unknownKey(kv.key, field, taskKeys)
		}
	}
	return t
}

// text reads a value used as text (ids, prompt, cwd). Any scalar is taken as
// written, so "id: 1" or "name: 2024" need no quotes; null is empty.
func (p *parser) text(n *yaml.Node, field string) string {
	n = p.deref(n)
	p.pos[field] = p.at(n)
	switch {
	case isNull(n):
		return ""
	case n.Kind != yaml.ScalarNode:
		p.fail(n, field, "must be a string")
		return ""
	}
	return n.Value
}

// str reads a value that must be written as a string. Arguments and
// environment values are handed to programs verbatim, so a YAML number or
// bool (which may be re-spelled: 0x10, 1e3, True) is refused instead of
// guessed at.
func (p *parser) str(n *yaml.Node, field string) (string, bool) {
	n = p.deref(n)
	p.pos[field] = p.at(n)
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" {
		return n.Value, true
	}
	switch {
	case n.Kind == yaml.ScalarNode && n.Style == 0 && (n.ShortTag() == "!!int" || n.ShortTag() == "!!float" || n.ShortTag() == "!!bool"):
		p.fail(n, field, "must be a string (write %q in quotes)", n.Value)
	default:
		p.fail(n, field, "must be a string")
	}
	return "", false
}

func (p *parser) stringList(n *yaml.Node, field string) []string {
	n = p.deref(n)
	p.pos[field] = p.at(n)
	switch {
	case isNull(n):
		return nil
	case n.Kind != yaml.SequenceNode:
		p.fail(n, field, "must be a list of strings")
		return nil
	}
	var out []string
	for i, el := range n.Content {
		if p.exhausted {
			break
		}
		if s, ok := p.str(el, field+"["+strconv.Itoa(i)+"]"); ok {
			out = append(out, s)
		}
	}
	return out
}

func (p *parser) stringMap(n *yaml.Node, field string) map[string]string {
	n = p.deref(n)
	p.pos[field] = p.at(n)
	switch {
	case isNull(n):
		return nil
	case n.Kind != yaml.MappingNode:
		p.fail(n, field, "must be a map of strings")
		return nil
	}
	pairs := p.pairs(n, field, true)
	out := make(map[string]string, len(pairs))
	for _, kv := range pairs {
		if p.exhausted {
			break
		}
		name := kv.key.Value
		if name == "" || strings.ContainsAny(name, "=\x00") {
			p.fail(kv.key, field, "invalid environment variable name %q", name)
			continue
		}
		if s, ok := p.str(kv.val, field+"."+name); ok {
			out[name] = s
		}
	}
	return out
}

func (p *parser) boolean(n *yaml.Node, field string) bool {
	n = p.deref(n)
	p.pos[field] = p.at(n)
	if isNull(n) {
		return false
	}
	var b bool
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" || n.Decode(&b) != nil {
		p.fail(n, field, "must be true or false")
		return false
	}
	return b
}

// duration reads a timeout written as a Go duration ("10m", "1h30m") or as a
// number of seconds.
func (p *parser) duration(n *yaml.Node, field string) Duration {
	n = p.deref(n)
	p.pos[field] = p.at(n)
	if isNull(n) {
		return 0
	}
	var secs float64
	switch {
	case n.Kind != yaml.ScalarNode:
		p.fail(n, field, `must be a duration like "10m" or a number of seconds`)
		return 0
	case n.ShortTag() == "!!str":
		d, err := time.ParseDuration(strings.TrimSpace(n.Value))
		if err != nil {
			p.fail(n, field, `invalid duration %q: write it like "90s", "10m" or "1h30m", or as a number of seconds`, n.Value)
			return 0
		}
		if d <= 0 {
			p.fail(n, field, "must be a positive duration")
			return 0
		}
		return Duration(d)
	case n.ShortTag() == "!!int":
		var i int64
		if err := n.Decode(&i); err != nil {
			p.fail(n, field, "number of seconds is out of range")
			return 0
		}
		secs = float64(i)
	case n.ShortTag() == "!!float":
		if err := n.Decode(&secs); err != nil || math.IsNaN(secs) {
			p.fail(n, field, `must be a duration like "10m" or a number of seconds`)
			return 0
		}
	default:
		p.fail(n, field, `must be a duration like "10m" or a number of seconds`)
		return 0
	}
	switch {
	case secs <= 0:
		p.fail(n, field, "must be a positive duration")
		return 0
	case secs*float64(time.Second) >= math.MaxInt64:
		p.fail(n, field, "number of seconds is out of range")
		return 0
	}
	return Duration(secs * float64(time.Second))
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

type pair struct{ key, val *yaml.Node }

// pairs returns the entries of mapping m with merge keys ("<<: *defaults")
// expanded: keys written in m win over merged ones, and earlier merges win
// over later ones, as YAML specifies. Duplicate keys are reported only when
// report is set, so a mapping merged into many places is reported once, where
// it is written.
func (p *parser) pairs(m *yaml.Node, field string, report bool) []pair {
	out := make([]pair, 0, len(m.Content)/2)
	seen := make(map[string]*yaml.Node, len(m.Content)/2)
	var merges []*yaml.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		if p.exhausted {
			return out
		}
		k, v := p.deref(m.Content[i]), m.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			merges = append(merges, v)
			continue
		}
		if k.Kind != yaml.ScalarNode {
			if report {
				p.errorf(k, field, "a key must be a string")
			}
			continue
		}
		if first, dup := seen[k.Value]; dup {
			if report {
				p.errorf(k, field, "duplicate key %q (first defined at line %d)", k.Value, first.Line)
			}
			continue
		}
		seen[k.Value] = k
		out = append(out, pair{k, v})
	}
	if len(merges) == 0 {
		return out
	}
	p.merging[m] = true
	defer delete(p.merging, m)
	for _, v := range merges {
		v = p.deref(v)
		var sources []*yaml.Node
		switch v.Kind {
		case yaml.MappingNode:
			sources = []*yaml.Node{v}
		case yaml.SequenceNode:
			for _, el := range v.Content {
				sources = append(sources, p.deref(el))
			}
		}
		for _, src := range sources {
			if src.Kind != yaml.MappingNode {
				if report {
					p.errorf(src, field, "<< must merge a mapping or a list of mappings")
				}
				continue
			}
			if p.merging[src] {
				continue // merges itself; its own keys are already in
			}
			for _, kv := range p.pairs(src, field, false) {
				if _, dup := seen[kv.key.Value]; !dup {
					seen[kv.key.Value] = kv.key
					out = append(out, kv)
				}
			}
		}
		if len(sources) == 0 && report {
			p.errorf(v, field, "<< must merge a mapping or a list of mappings")
		}
	}
	return out
}

// unknownKey rejects a key the format does not know, suggesting the known key
// it is probably a typo of.
func (p *parser) unknownKey(k *yaml.Node, field string, known []string) {
	msg := fmt.Sprintf("unknown key %q", k.Value)
	if s := suggest.Closest(k.Value, known); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	}
	p.errorf(k, field, "%s", msg)
}

// dedupe drops repeats of an error at the same spot. They arise when one
// mapping is used in several places through an alias or a merge key: the
// mistake is written once, so it is reported once.
func dedupe(errs ErrorList) ErrorList {
	type key struct {
		line, col int
		msg       string
	}
	seen := make(map[key]bool, len(errs))
	out := errs[:0]
	for _, e := range errs {
		k := key{e.Pos.Line, e.Pos.Col, e.Msg}
		if e.Pos.Line > 0 && seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, e)
	}
	return out
}
