package workflow

import (
	"bytes"
	"io"
	"strconv"
	"strings"

	"github.com/vibeteam/vibeteam/core/sandbox"

	"gopkg.in/yaml.v3"

	"github.com/vibeteam/vibeteam/internal/source"
	"github.com/vibeteam/vibeteam/internal/yamlnode"
)

// Keys accepted at each level, in the order suggestions prefer them and
// messages list them.
var (
	rootKeys  = []string{"id", "goal", "stages", "mcp", "secrets", "sandbox"}
	stageKeys = []string{"id", "tasks"}
	taskKeys  = []string{"id", "adapter", "executionMode", "prompt", "extraArgs", "cwd", "env",
		"name", "pendingInputs", "keepAlive", "timeout", "inactivityTimeout", "mcp", "sandbox"}
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
	if def != nil && !p.Exhausted {
		p.Errs = append(p.Errs, check(def, opts, p.Pos, p.Broken, p.rootPos)...)
	}
	p.Errs.Sort()
	probs := p.Errs.Dedupe()
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
		return nil, ErrorList{{Pos: Pos{File: path}, Msg: source.Reason(err)}}
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
	empty := ErrorList{{Pos: Pos{File: file, Line: 1, Col: 1}, Msg: yamlnode.MsgEmptyFile}}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, empty
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	switch err := yamlnode.SafeDecode(dec, &doc); {
	case err == io.EOF:
		return nil, empty
	case err != nil:
		return nil, ErrorList{yamlnode.SyntaxError(err, file, data)}
	}
	if len(doc.Content) == 0 || isBlank(doc.Content[0]) {
		return nil, empty
	}
	var extra yaml.Node
	switch err := yamlnode.SafeDecode(dec, &extra); {
	case err == io.EOF:
	case err != nil:
		return nil, ErrorList{yamlnode.SyntaxError(err, file, data)}
	case len(extra.Content) > 0 && !isBlank(extra.Content[0]):
		n := extra.Content[0]
		return nil, ErrorList{{Pos: Pos{File: file, Line: n.Line, Col: n.Column},
			Msg: "a file holds one workflow; found a second YAML document"}}
	}
	return doc.Content[0], nil
}

// isBlank is a document with no content, as "---" alone gives.
func isBlank(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" && n.Value == ""
}

// parser walks the node tree of a stage workflow or a grimoire with the
// walker all of vibeteam's files share (unknown keys, wrong types, merge
// keys, aliases: see yamlnode). It collects the structural problems itself
// and leaves the semantic ones to the checker shared with Validate, handing
// it the walker's Pos (field path -> position of the value written for it)
// and Broken (fields with a structural error already reported).
type parser struct {
	*yamlnode.Walker
	rootPos Pos
	// loops is how deep in loops the step being read is.
	loops int
}

func newParser(file string, size int) *parser {
	w := yamlnode.NewWalker(file, size)
	w.Merge = true
	return &parser{Walker: w}
}

func (p *parser) definition(n *yaml.Node) *Definition {
	root := p.Deref(n)
	p.rootPos = p.At(root)
	if root.Kind != yaml.MappingNode {
		p.Errorf(root, "", `the top level must be a mapping with "id" and "stages"`)
		return nil
	}
	pairs := p.Pairs(root, "", true)
	if kindOf(pairs) == KindGrimoire {
		return p.grimoire(pairs)
	}
	def := &Definition{Kind: KindStages, Source: p.File}
	p.Visit(pairs, "", rootKeys, func(kv yamlnode.Pair) {
		switch kv.Key.Value {
		case "id":
			def.ID = p.text(kv.Val, "id")
		case "goal":
			def.Goal = p.text(kv.Val, "goal")
		case "stages":
			def.Steps = p.stages(kv.Val, "stages")
		case "mcp":
			def.MCP = p.mcp(kv.Val, "mcp")
		case "secrets":
			def.Secrets = p.secrets(kv.Val)
		case "sandbox":
			def.Sandbox = sandbox.Parse(p.Walker, kv.Val, "sandbox")
		}
	})
	return def
}

// secrets reads the names whose values are secret.
func (p *parser) secrets(n *yaml.Node) []string {
	names := p.Strings(n, "secrets", p.String)
	for i, name := range names {
		if strings.TrimSpace(name) == "" || strings.ContainsAny(name, "= \t\n") {
			f := "secrets[" + strconv.Itoa(i) + "]"
			p.Fail(p.Deref(n), f, "a secret's name is a --set variable or env: key: a word without '=' or spaces")
		}
	}
	return names
}

func (p *parser) stages(n *yaml.Node, field string) []Step {
	return yamlnode.List(p.Walker, n, field, "a list of stages", func(_ int, el *yaml.Node, sf string) (Step, bool) {
		el, ok := p.Mapping(el, sf, `a mapping with "id" and "tasks"`)
		if !ok {
			p.Broken[field] = true
			return Step{}, false
		}
		return p.stage(el, sf), true
	})
}

// stage reads one stage, n being a mapping.
func (p *parser) stage(n *yaml.Node, field string) Step {
	p.Pos[field] = p.At(n)
	s := Step{Type: StepStage, Pos: p.At(n)}
	p.Visit(p.Pairs(n, field, true), field, stageKeys, func(kv yamlnode.Pair) {
		switch kv.Key.Value {
		case "id":
			s.ID = p.text(kv.Val, field+".id")
		case "tasks":
			s.Tasks = p.tasks(kv.Val, field+".tasks")
		}
	})
	return s
}

func (p *parser) tasks(n *yaml.Node, field string) []Task {
	return yamlnode.List(p.Walker, n, field, "a list of tasks", func(_ int, el *yaml.Node, tf string) (Task, bool) {
		el, ok := p.Mapping(el, tf, `a mapping with "id" and "adapter"`)
		if !ok {
			p.Broken[field] = true
			return Task{}, false
		}
		return p.task(el, tf), true
	})
}

// task reads one task, n being a mapping.
func (p *parser) task(n *yaml.Node, field string) Task {
	p.Pos[field] = p.At(n)
	t := Task{Pos: p.At(n)}
	p.Visit(p.Pairs(n, field, true), field, taskKeys, func(kv yamlnode.Pair) {
		f := field + "." + kv.Key.Value
		switch kv.Key.Value {
		case "id":
			t.ID = p.text(kv.Val, f)
		case "adapter":
			t.Adapter = p.text(kv.Val, f)
		case "executionMode":
			t.ExecutionMode = p.text(kv.Val, f)
		case "prompt":
			t.Prompt = p.text(kv.Val, f)
		case "extraArgs":
			t.ExtraArgs = p.Strings(kv.Val, f, p.String)
		case "cwd":
			t.Cwd = p.text(kv.Val, f)
		case "env":
			t.Env = p.Env(kv.Val, f, p.String)
		case "name":
			t.Name = p.text(kv.Val, f)
		case "pendingInputs":
			t.PendingInputs = p.Strings(kv.Val, f, p.String)
		case "keepAlive":
			t.KeepAlive, _ = p.Bool(kv.Val, f)
		case "timeout":
			t.Timeout = p.duration(kv.Val, f)
		case "inactivityTimeout":
			t.InactivityTimeout = p.duration(kv.Val, f)
		case "mcp":
			t.MCP = p.mcp(kv.Val, f)
		case "sandbox":
			t.Sandbox = sandbox.Parse(p.Walker, kv.Val, f)
		}
	})
	return t
}

// text reads a value used as text (ids, prompt, cwd): any scalar, as
// written; null is empty.
func (p *parser) text(n *yaml.Node, field string) string {
	s, _ := p.Text(n, field)
	return s
}

// durationSpec: a timeout is written as a Go duration ("10m", "1h30m") or as
// a number of seconds, and must be positive.
var durationSpec = yamlnode.DurationSpec{Seconds: true}

func (p *parser) duration(n *yaml.Node, field string) Duration {
	d, _ := p.Duration(n, field, durationSpec)
	return Duration(d)
}
