package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/vibeteam/vibeteam/internal/suggest"
	"maps"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"text/template"
	"text/template/parse"
	"time"
)

// mode says what the values a template prints become.
type mode int

const (
	// modeText prints values by their type: strings as they are, lists and
	// objects as JSON, null as nothing (spells, inputs, when).
	modeText mode = iota
	// modeCommand also shell-quotes each value as one word (script commands).
	modeCommand
)

// valueFunc is the function appended to every printing action of a template,
// so that the rendering of a value is ours and not fmt's ("map[a:b]",
// "<no value>"). The leading underscore keeps it out of the way of names a
// user would pick.
const valueFunc = "_value"

// run is one rendering: its data, its mode, and what it needs to follow
// includes. Partials are rendered by child runs in the same goroutine.
type run struct {
	mode   mode
	data   map[string]any
	scope  *Scope  // explains .previous and .loop_entry when they are missing
	spells *Spells // nil: include is not available
	chain  []string
	// stop is set when the time limit has passed: the functions the
	// template calls then fail, so an abandoned render ends at its next
	// printed value or include instead of running on.
	stop *atomic.Bool
	// printed holds the kind of each value printed, for the error of a
	// `when` that is not a boolean.
	printed []printedValue
	// actions are the printing actions of the template, by the number
	// hookActions gave them: where each is, for the errors of commands.
	actions []action
	// values, in modeCommand, collects each printed value and prints a
	// sentinel word in its place; placeValues then quotes each value for
	// where its sentinel landed in the shell text (see shellplace.go).
	values *commandValues
	// warnings are the run's and its partials': the output keys an agent
	// did not report, rendered empty.
	warnings *[]string
	// dry is set in the rendering of a dry scope (a preview).
	dry *dryRun
}

// action is a printing action of a template: its line and how it was
// written ({{.x}}).
type action struct {
	line int
	src  string
}

type printedValue struct{ kind, text string }

func (r *run) stopped() bool { return r.stop != nil && r.stop.Load() }

// errStopped ends an abandoned render; nobody reads its message.
var errStopped = errors.New("rendering stopped")

// rawString is a value {{raw}} let through unescaped.
type rawString string

// child is the run of a partial: its warnings are its own, for include to
// name the partial in them.
func (r *run) child(data map[string]any, name string) *run {
	c := &run{mode: r.mode, data: data, scope: r.scope, spells: r.spells,
		chain: append(append([]string(nil), r.chain...), name), stop: r.stop, warnings: new([]string)}
	if r.dry != nil {
		// The arguments of the include are known values.
		c.dry = &dryRun{view: r.dry.view, known: maps.Clone(r.dry.known), pending: r.dry.pending}
	}
	return c
}

func (r *run) funcs() template.FuncMap {
	fm := template.FuncMap{
		valueFunc: r.value,
		"raw": func(v any) (rawString, error) {
			s, err := valueString(v)
			return rawString(s), err
		},
		"step": r.step,
	}
	if r.spells != nil {
		fm["include"] = r.include
	}
	return templateFuncs(fm)
}

// parse parses text, with the include form of the spec rewritten into Go's,
// and hooks valueFunc into every action that prints.
func (r *run) parse(name, text string) (*template.Template, error) {
	text, err := rewriteIncludes(text)
	if err != nil {
		return nil, err
	}
	t, err := template.New(name).Option("missingkey=error").Funcs(r.funcs()).Parse(text)
	if err != nil {
		return nil, errors.New(cleanMessage(err.Error()))
	}
	r.actions = nil
	for _, tt := range t.Templates() {
		if tt.Tree != nil {
			hookActions(tt.Tree, tt.Tree.Root, &r.actions)
		}
	}
	return t, nil
}

// hookActions appends `| _value N` to every action that prints, N being
// its index in actions, where it is recorded. Actions that declare or
// assign a variable print nothing and are left alone.
func hookActions(tree *parse.Tree, n parse.Node, actions *[]action) {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return
		}
		for _, c := range n.Nodes {
			hookActions(tree, c, actions)
		}
	case *parse.ActionNode:
		p := n.Pipe
		if len(p.Decl) > 0 || len(p.Cmds) == 0 {
			return
		}
		id := len(*actions)
		*actions = append(*actions, action{line: nodeLine(tree, n), src: n.String()})
		// A copy of an existing command keeps its link to the tree, which
		// text/template needs to place an error.
		last := p.Cmds[len(p.Cmds)-1]
		cmd := last.Copy().(*parse.CommandNode)
		num := &parse.NumberNode{NodeType: parse.NodeNumber, Pos: last.Pos, IsInt: true, IsUint: true, IsFloat: true,
			Int64: int64(id), Uint64: uint64(id), Float64: float64(id), Text: strconv.Itoa(id)}
		cmd.Args = []parse.Node{parse.NewIdentifier(valueFunc).SetTree(tree).SetPos(last.Pos), num}
		p.Cmds = append(p.Cmds, cmd)
	case *parse.IfNode:
		hookActions(tree, n.List, actions)
		hookActions(tree, n.ElseList, actions)
	case *parse.RangeNode:
		hookActions(tree, n.List, actions)
		hookActions(tree, n.ElseList, actions)
	case *parse.WithNode:
		hookActions(tree, n.List, actions)
		hookActions(tree, n.ElseList, actions)
	}
}

// nodeLine is the line of n in its template.
func nodeLine(tree *parse.Tree, n parse.Node) int {
	loc, _ := tree.ErrorContext(n) // "name:line:col"
	parts := strings.Split(loc, ":")
	if len(parts) < 3 {
		return 1
	}
	line, err := strconv.Atoi(parts[len(parts)-2])
	if err != nil {
		return 1
	}
	return line
}

// render parses and executes text in the calling goroutine.
func (r *run) render(name, text string) (string, error) {
	t, err := r.parse(name, text)
	if err != nil {
		return "", err
	}
	if r.dry != nil {
		if err := r.dryCheck(t); err != nil {
			return "", err
		}
	}
	for tries := 0; ; tries++ {
		out := &limitedBuffer{max: maxOutput}
		err := t.Execute(out, r.data)
		if err == nil {
			return out.String(), nil
		}
		// A key an agent did not report is empty: the template runs
		// again with it set to null, and the run warns of it.
		if tries < maxOptional && r.optionalOutput(t, err) {
			r.printed = nil
			if r.values != nil {
				r.values = newCommandValues()
			}
			continue
		}
		return "", r.explain(t, err)
	}
}

// maxOptional bounds the missing output keys one template may read.
const maxOptional = 64

// optionalOutput reports whether err is a missing key under the outputs of
// a step result ({{.review.outputs.issues}} of an agent that reported no
// issues), and if so adds the key, null, to a copy of those outputs in the
// data and records the warning. Every other missing key stays an error.
func (r *run) optionalOutput(t *template.Template, err error) bool {
	m := execErrorRE.FindStringSubmatch(err.Error())
	if m == nil {
		return false
	}
	k := noEntryRE.FindStringSubmatch(m[3])
	if k == nil || k[1] == "" {
		return false
	}
	key, uerr := strconv.Unquote(`"` + k[1] + `"`)
	if uerr != nil {
		return false
	}
	node, dotIsTop := findNode(t, m[1], key)
	cur, path, where, ok := r.fieldChain(node, dotIsTop)
	if !ok {
		return false
	}
	// parent is the map at path[:i], grand the one at path[:i-1].
	var grand, parent map[string]any
	for i, seg := range path {
		obj, ok := cur.(map[string]any)
		if !ok {
			return false
		}
		grand, parent = parent, obj
		next, ok := obj[seg]
		if ok {
			cur = next
			continue
		}
		if seg != key || i == 0 || path[i-1] != "outputs" || !isResult(grand) {
			return false
		}
		outputs := maps.Clone(obj)
		outputs[key] = nil
		grand["outputs"] = outputs
		if r.warnings != nil {
			*r.warnings = append(*r.warnings, fmt.Sprintf("%s is empty: the agent did not report %q in its outputs", pathString(where, path[:i+1]), key))
		}
		return true
	}
	return false
}

// isResult reports whether v is a step result as templates see it.
func isResult(v any) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	_, out := m["outputs"]
	_, code := m["exit_code"]
	_, st := m["status"]
	return out && code && st
}

// renderLimited is render bounded in time.
func (r *run) renderLimited(name, text string) (string, error) {
	r.stop = new(atomic.Bool)
	return limited(r.stop, func() (string, error) { return r.render(name, text) })
}

// limited runs render bounded in time. text/template cannot be cancelled,
// so a render that runs too long is abandoned (and told, through stop, to
// stop at its next function call).
func limited(stop *atomic.Bool, render func() (string, error)) (string, error) {
	type result struct {
		s   string
		err error
	}
	done := make(chan result, 1)
	go func() {
		s, err := render()
		done <- result{s, err}
	}()
	timer := time.NewTimer(maxRenderTime)
	defer timer.Stop()
	select {
	case res := <-done:
		return res.s, res.err
	case <-timer.C:
		stop.Store(true)
		return "", fmt.Errorf("rendering took longer than %s (a range over a huge number?)", maxRenderTime)
	}
}

// value renders one printed value; id is the action's (see hookActions).
func (r *run) value(id int, v any) (string, error) {
	if r.stopped() {
		return "", errStopped
	}
	if raw, ok := v.(rawString); ok {
		return string(raw), nil
	}
	s, err := valueString(v)
	if err != nil {
		return "", err
	}
	r.printed = append(r.printed, printedValue{kindOf(v, s), s})
	if r.mode == modeCommand {
		if strings.IndexByte(s, 0) >= 0 {
			return "", &funcError{"a value holds a NUL byte, which no shell command can carry"}
		}
		if r.values != nil {
			return r.values.add(id, s), nil
		}
		return ShellQuote(s), nil
	}
	return s, nil
}

// step is {{step "run-tests"}}: the result of a step whose name is not a
// template identifier (it has a hyphen), or any name of the scope.
func (r *run) step(name string) (any, error) {
	if v, ok := r.data[name]; ok {
		return v, nil
	}
	msg := fmt.Sprintf("no step %q has finished", name)
	if s := suggest.Closest(name, r.stepNames()); s != "" {
		msg += fmt.Sprintf(" (did you mean %s?)", s)
	}
	return nil, &funcError{msg}
}

func (r *run) stepNames() []string {
	if r.scope == nil {
		return nil
	}
	return r.scope.names()
}

// funcError is an error of one of our template functions, whose message
// says all there is: it is shown after the line, without text/template's
// "error calling" and node.
type funcError struct{ msg string }

func (e *funcError) Error() string { return e.msg }

// valueString renders a value by its type: strings as they are, null as
// nothing, booleans and numbers as JSON writes them, and lists and objects as
// JSON, so that an agent or a command reads `["a","b"]`, not Go's `[a b]`.
func valueString(v any) (string, error) {
	switch v := v.(type) {
	case nil:
		return "", nil
	case string:
		return v, nil
	case rawString:
		return string(v), nil
	case bool:
		return strconv.FormatBool(v), nil
	case int:
		return strconv.Itoa(v), nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return strconv.FormatFloat(v, 'g', -1, 64), nil
		}
	case error:
		return v.Error(), nil
	}
	rv := reflect.ValueOf(v)
	if (rv.Kind() == reflect.Pointer || rv.Kind() == reflect.Interface) && rv.IsNil() {
		return "", nil
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// A value that JSON cannot hold (a function, a channel) cannot come
		// from the scope; fmt's form is better than failing.
		return fmt.Sprint(v), nil
	}
	s := strings.TrimSuffix(b.String(), "\n")
	if s == "null" {
		return "", nil
	}
	return s, nil
}

// kindOf names the JSON type of v, for error messages.
func kindOf(v any, rendered string) string {
	if v == nil || rendered == "" && !isString(v) {
		return "null"
	}
	switch reflect.ValueOf(v).Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.Map, reflect.Struct:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

func isString(v any) bool {
	return reflect.ValueOf(v).Kind() == reflect.String
}

// execErrorRE takes apart the errors text/template gives while executing:
// "template: NAME:LINE:COL: executing "NAME" at <NODE>: MESSAGE".
var execErrorRE = regexp.MustCompile(`(?s)^template: ([^:]*:\d+:\d+): executing "[^"]*" at <(.*?)>: (.*)$`)

// noEntryRE matches text/template's ways of saying a key is missing: from a
// map, from a map that is null, and from a null value.
var noEntryRE = regexp.MustCompile(`^(?:map has no entry for key|nil data; no entry for key) "((?:[^"\\]|\\.)*)"$|^nil pointer evaluating interface \{\}\.(\w+)$`)

// explain turns an execution error into a message for the author of the
// template: a missing key is named with where it was looked for, and errors
// of include and step keep their own words.
func (r *run) explain(t *template.Template, err error) error {
	if errors.Is(err, errStopped) || r.stopped() {
		return errStopped
	}
	if errors.Is(err, errTooLarge) {
		return fmt.Errorf("the rendered text is larger than %d MiB", maxOutput>>20)
	}
	msg := err.Error()
	m := execErrorRE.FindStringSubmatch(msg)
	if m == nil {
		return errors.New(cleanMessage(msg))
	}
	loc, context, rest := m[1], m[2], m[3]
	parts := strings.Split(loc, ":")
	line, col := parts[len(parts)-2], parts[len(parts)-1]
	prefix := "line " + line + ": "
	var ie *includeError
	var fe *funcError
	var ce *chainError
	switch {
	case errors.As(err, &ce):
		// The chain of names says where; lines of every level would not help.
		return ce
	case errors.As(err, &ie):
		return &includeError{msg: prefix + ie.msg}
	case errors.As(err, &fe):
		return errors.New(prefix + fe.msg)
	}
	if k := noEntryRE.FindStringSubmatch(rest); k != nil {
		key := k[2]
		if k[2] == "" {
			key, _ = strconv.Unquote(`"` + k[1] + `"`)
		}
		node, dotIsTop := findNode(t, loc, key)
		if node == "" {
			node, dotIsTop = context, false
		}
		return errors.New(prefix + r.missing(node, key, dotIsTop))
	}
	return errors.New("line " + line + ", column " + col + ": at <" + context + ">: " + rest)
}

// findNode finds the field chain of a missing key from the location of the
// error ("NAME:LINE:COL"), and whether dot is the top of the scope there (it
// is not inside range and with, nor in a defined template). text/template
// names only the node it was at, which for (step "x").key is the "x".
func findNode(t *template.Template, loc, key string) (node string, dotIsTop bool) {
	for _, tt := range t.Templates() {
		if tt.Tree == nil {
			continue
		}
		f := &nodeFinder{tree: tt.Tree, loc: loc, key: key}
		f.walk(tt.Tree.Root, tt.Name() == t.Name(), nil)
		if f.found != "" {
			return f.found, f.dotIsTop
		}
	}
	return "", false
}

type nodeFinder struct {
	tree     *parse.Tree
	loc, key string
	found    string
	dotIsTop bool
}

// walk visits n; top says whether dot is the top of the scope, chain is the
// (step "x").a.b the node is part of, if any.
func (f *nodeFinder) walk(n parse.Node, top bool, chain *parse.ChainNode) {
	if n == nil || f.found != "" {
		return
	}
	if l, _ := f.tree.ErrorContext(n); l == f.loc {
		switch {
		case chain != nil && slices.Contains(chain.Field, f.key):
			f.found, f.dotIsTop = chain.String(), top
			return
		case isChain(n):
			f.found, f.dotIsTop = n.String(), top
			return
		}
	}
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return
		}
		for _, c := range n.Nodes {
			f.walk(c, top, nil)
		}
	case *parse.ActionNode:
		f.walk(n.Pipe, top, nil)
	case *parse.PipeNode:
		if n == nil {
			return
		}
		for _, c := range n.Cmds {
			for _, a := range c.Args {
				f.walk(a, top, chain)
			}
		}
	case *parse.ChainNode:
		f.walk(n.Node, top, n)
	case *parse.IfNode:
		f.walk(n.Pipe, top, nil)
		f.walk(n.List, top, nil)
		f.walk(n.ElseList, top, nil)
	case *parse.RangeNode:
		f.walk(n.Pipe, top, nil)
		f.walk(n.List, false, nil)
		f.walk(n.ElseList, top, nil)
	case *parse.WithNode:
		f.walk(n.Pipe, top, nil)
		f.walk(n.List, false, nil)
		f.walk(n.ElseList, top, nil)
	case *parse.TemplateNode:
		f.walk(n.Pipe, top, nil)
	}
}

func isChain(n parse.Node) bool {
	switch n.(type) {
	case *parse.FieldNode, *parse.VariableNode, *parse.ChainNode:
		return true
	}
	return false
}

// templateErrRE matches the "template: NAME:3:7: " text/template puts in
// front of its errors; the name is ours and means nothing to a user.
var templateErrRE = regexp.MustCompile(`^template: [^:]*:(\d+)(?::(\d+))?: `)

func cleanMessage(msg string) string {
	if m := templateErrRE.FindStringSubmatch(msg); m != nil {
		loc := "line " + m[1]
		if m[2] != "" {
			loc += ", column " + m[2]
		}
		msg = loc + ": " + msg[len(m[0]):]
	}
	return msg
}
