package render

// A dry scope: the Scope of a preview, which renders the templates of a
// grimoire as a run would, at the same points of the walk, and runs
// nothing. What only a run can know (the result of a step, .previous,
// .loop_entry, the iteration of a loop) is shown as a placeholder,
// ⟨tests.output⟩, and what is known (the goal, --set variables, the bead,
// inputs) is rendered as a run renders it, by the same code. Before a
// template executes, its references are checked against the steps that
// have run at that point of the file, so a typo or a step that comes later
// is an error here rather than a blocked run.

import (
	"errors"
	"fmt"
	"github.com/vibeteam/vibeteam/internal/suggest"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/template"
	"text/template/parse"
)

// Placeholder is how a preview shows a value known only at run time:
// Placeholder("tests.output") is ⟨tests.output⟩.
func Placeholder(path string) string { return "⟨" + path + "⟩" }

// ErrRunTime is the error of When in a dry scope for a condition that only
// the run can decide.
var ErrRunTime = errors.New("decided when it runs")

// resultKeys are the keys of a step result in templates (StepResult.Map).
var resultKeys = slices.Sorted(maps.Keys(StepResult{}.Map()))

// resultKinds names the JSON type of each key of a step result but outputs,
// whose keys the agent chooses.
var resultKinds = map[string]string{
	"output": "string", "summary": "string", "success": "boolean", "failed": "boolean",
	"exit_code": "number", "duration_ms": "number", "changed_files": "array",
	"status": "string",
}

// dryState is what a dry scope knows besides a Scope: the whole grimoire,
// so that reading a step before it has run says where it is.
type dryState struct {
	// steps are every step and alias of the grimoire, with where they are.
	steps map[string]string
	// bodies are the steps and aliases of each loop, nested ones included:
	// from the second iteration on, they have a result from the one before.
	bodies map[string][]string
	// optional are the output keys the templates read (.impl.outputs.KEY).
	mu       sync.Mutex
	optional []string
}

// NewDryScope returns the scope of a preview: a Scope whose recorded
// results, .previous, .loop_entry and iterations render as placeholders,
// and whose renderings check every reference first (see dryWalker). The
// interpreter drives it as it drives a run's (Record with any result,
// EnterLoop, NextIteration, ExitLoop). A nil bead is none: .bead is an
// empty object as in a run without one, and a template reading a key of it
// is warned about. Tell it of every step first (Declare, DeclareLoop).
func NewDryScope(goal string, vars map[string]string, bead map[string]any) *Scope {
	s := NewScope(goal, vars)
	s.SetBead(bead)
	s.dry = &dryState{steps: map[string]string{}, bodies: map[string][]string{}}
	return s
}

// Declare tells a dry scope of a step of the grimoire, its `output` alias
// ("" for none) and where it is ("line 12").
func (s *Scope) Declare(name, alias, where string) {
	if s.dry == nil {
		return
	}
	for _, n := range []string{name, alias} {
		if _, ok := s.dry.steps[n]; n != "" && !ok {
			s.dry.steps[n] = where
		}
	}
}

// DeclareLoop tells a dry scope the steps and aliases of loop name, nested
// ones included.
func (s *Scope) DeclareLoop(name string, body []string) {
	if s.dry != nil {
		s.dry.bodies[name] = body
	}
}

// Optional lists, sorted, the keys of agents' outputs the templates of a
// dry scope read so far (.impl.outputs.KEY): an agent may leave one out,
// and it then renders empty, with a warning.
func (s *Scope) Optional() []string {
	if s.dry == nil {
		return nil
	}
	s.dry.mu.Lock()
	defer s.dry.mu.Unlock()
	return slices.Sorted(slices.Values(s.dry.optional))
}

func (d *dryState) addOptional(path string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !slices.Contains(d.optional, path) {
		d.optional = append(d.optional, path)
	}
}

// dryView is a dry scope as one rendering sees it: a copy, as a rendering
// abandoned at its time limit may still read it while the walk goes on.
type dryView struct {
	state    *dryState
	hasBead  bool
	previous bool            // .previous is defined
	ran      map[string]bool // steps and aliases recorded
	ended    map[string]bool // loops that have ended; their .iteration stays
	loops    []string        // the loops running, outermost first
}

// dryRun is what a rendering of a dry scope adds to a run.
type dryRun struct {
	view *dryView
	// known are the names of the data that are known values whatever the
	// scope says: a spell's inputs, the arguments of an include.
	known map[string]bool
	// pending is set when a value only a run knows was met; shared with
	// the partials.
	pending *bool
}

// newRun is a rendering of the scope: dry when the scope is.
func (s *Scope) newRun(m mode, data map[string]any, known ...string) *run {
	r := &run{mode: m, data: data, scope: s, warnings: new([]string)}
	if s.dry == nil {
		return r
	}
	v := &dryView{state: s.dry, hasBead: s.Bead != nil, ran: map[string]bool{}, ended: map[string]bool{}}
	for name := range s.Steps {
		v.ran[name] = true
	}
	for alias := range s.Aliases {
		v.ran[alias] = true
	}
	for name := range s.Iterations {
		v.ended[name] = true
	}
	for _, f := range s.Loops {
		v.loops = append(v.loops, f.Name)
	}
	_, v.previous = s.Steps[s.Previous]
	r.dry = &dryRun{view: v, known: map[string]bool{}, pending: new(bool)}
	for _, k := range known {
		r.dry.known[k] = true
	}
	return r
}

func (v *dryView) inLoop(name string) bool { return slices.Contains(v.loops, name) }

// placeholderResult is a step result whose every value is a placeholder.
// outputs is empty: a template reading a key of it directly is rewritten to
// a placeholder, whatever the key.
func placeholderResult(name string) map[string]any {
	m := make(map[string]any, len(resultKeys))
	for _, k := range resultKeys {
		m[k] = Placeholder(name + "." + k)
	}
	m["outputs"] = map[string]any{}
	return m
}

// dryErrors are the problems a template has before it runs: each is
// "line N: message".
type dryErrors []string

func (e dryErrors) Error() string { return strings.Join(e, "; ") }

// dryCheck checks and rewrites the references of a parsed template of a
// dry rendering (see dryWalker); its warnings join the run's.
func (r *run) dryCheck(t *template.Template) error {
	var errs dryErrors
	for _, tt := range t.Templates() {
		if tt.Tree == nil {
			continue
		}
		main := tt.Name() == t.Name()
		w := &dryWalker{r: r, tree: tt.Tree, vars: map[string]string{}}
		c := walkCtx{dot: dotTop, main: main}
		if !main {
			c.dot = dotOther // a defined template's dot is what it is given
		}
		w.list(tt.Tree.Root, c)
		errs = append(errs, w.errs...)
		for _, msg := range w.warns {
			if !slices.Contains(*r.warnings, msg) {
				*r.warnings = append(*r.warnings, msg)
			}
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// placeErrors is placeError for each problem of err.
func placeErrors(step, field, text string, err error) error {
	var pe dryErrors
	if !errors.As(err, &pe) {
		// The values of a command that cannot be placed are joined.
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			var errs []error
			for _, e := range j.Unwrap() {
				errs = append(errs, placeError(step, field, text, e))
			}
			return errors.Join(errs...)
		}
		return placeError(step, field, text, err)
	}
	errs := make([]error, len(pe))
	for i, msg := range pe {
		errs[i] = placeError(step, field, text, errors.New(msg))
	}
	return errors.Join(errs...)
}

// joinPrefixed puts prefix in front of each problem of err.
func joinPrefixed(prefix string, err error) error {
	var pe dryErrors
	if !errors.As(err, &pe) {
		return errors.New(prefix + err.Error())
	}
	errs := make([]error, len(pe))
	for i, msg := range pe {
		errs[i] = errors.New(prefix + msg)
	}
	return errors.Join(errs...)
}

// dotKind is what dot is at a point of a template.
type dotKind int

const (
	dotTop     dotKind = iota // the scope
	dotOther                  // a known value (inside range or with, in a defined template)
	dotPending                // a value only a run knows (path names it)
)

type walkCtx struct {
	dot  dotKind
	path string // of a pending dot
	main bool   // $ is the scope
	// flatRange: the innermost range is one whose body is shown once, for
	// a list only a run knows; its break and continue become text.
	flatRange bool
}

// dryWalker checks the references of one template against the scope
// of the preview and replaces those to values only a run knows with
// placeholders: an action that prints one prints ⟨tests.output⟩ (or, for
// an expression, ⟨printf "%q" .tests.output⟩); an if, with or range that
// depends on one shows its branches one after the other between markers,
// ⟨if .previous.failed⟩...⟨else⟩...⟨end⟩.
type dryWalker struct {
	r    *run
	tree *parse.Tree
	// vars are the variables that hold a value only a run knows, with the
	// path their placeholders show.
	vars  map[string]string
	errs  []string
	warns []string
}

func (w *dryWalker) list(l *parse.ListNode, c walkCtx) {
	if l == nil {
		return
	}
	out := make([]parse.Node, 0, len(l.Nodes))
	for _, n := range l.Nodes {
		out = append(out, w.node(n, c)...)
	}
	l.Nodes = out
}

// node returns what replaces n.
func (w *dryWalker) node(n parse.Node, c walkCtx) []parse.Node {
	switch n := n.(type) {
	case *parse.ActionNode:
		pending := w.pipe(n.Pipe, c)
		if pending && w.includeArgs(n.Pipe, c) {
			// The partial is rendered with placeholders for its arguments.
		} else if pending {
			path := w.pipePath(n.Pipe, c)
			w.replace(n.Pipe, c)
			w.declare(n.Pipe.Decl, path)
		} else {
			w.declare(n.Pipe.Decl, "")
		}
	case *parse.IfNode:
		if w.pipe(n.Pipe, c) {
			return w.flatten("if", &n.BranchNode, c, c)
		}
		w.list(n.List, c)
		w.list(n.ElseList, c)
	case *parse.WithNode:
		if w.pipe(n.Pipe, c) {
			inner := c
			inner.dot, inner.path = dotPending, w.pipePath(n.Pipe, c)
			w.declare(n.Pipe.Decl, inner.path)
			return w.flatten("with", &n.BranchNode, inner, c)
		}
		w.declare(n.Pipe.Decl, "")
		inner := c
		inner.dot = dotOther
		w.list(n.List, inner)
		w.list(n.ElseList, c)
	case *parse.RangeNode:
		if w.pipe(n.Pipe, c) {
			inner := c
			inner.dot, inner.path, inner.flatRange = dotPending, w.pipePath(n.Pipe, c)+"[]", true
			switch len(n.Pipe.Decl) {
			case 1:
				w.declare(n.Pipe.Decl, inner.path)
			case 2:
				w.vars[n.Pipe.Decl[0].Ident[0]] = n.Pipe.Decl[0].Ident[0]
				w.declare(n.Pipe.Decl[1:], inner.path)
			}
			return w.flatten("range", &n.BranchNode, inner, c)
		}
		w.declare(n.Pipe.Decl, "")
		inner := c
		inner.dot, inner.flatRange = dotOther, false
		w.list(n.List, inner)
		w.list(n.ElseList, c)
	case *parse.TemplateNode:
		if w.pipe(n.Pipe, c) {
			*w.r.dry.pending = true
			return []parse.Node{w.marker(n.Pos, Placeholder(strings.TrimSuffix(strings.TrimPrefix(n.String(), "{{"), "}}")))}
		}
	case *parse.BreakNode:
		if c.flatRange {
			return []parse.Node{w.marker(n.Pos, Placeholder("break"))}
		}
	case *parse.ContinueNode:
		if c.flatRange {
			return []parse.Node{w.marker(n.Pos, Placeholder("continue"))}
		}
	}
	return []parse.Node{n}
}

// includeArgs replaces the arguments of an include that only a run knows
// with their placeholders, so that the partial is still rendered. It
// reports false for a pipeline that is not one include.
func (w *dryWalker) includeArgs(p *parse.PipeNode, c walkCtx) bool {
	cmds, _ := unhooked(p)
	if len(cmds) != 1 || len(p.Decl) > 0 {
		return false
	}
	if id, ok := cmds[0].Args[0].(*parse.IdentifierNode); !ok || id.Ident != "include" {
		return false
	}
	*w.r.dry.pending = true
	for i, a := range cmds[0].Args[1:] {
		if w.arg(a, c) {
			text := Placeholder(w.argPath(a, c))
			cmds[0].Args[i+1] = &parse.StringNode{NodeType: parse.NodeString, Pos: a.Position(), Quoted: strconv.Quote(text), Text: text}
		}
	}
	return true
}

// flatten shows both branches of a node whose condition only a run knows.
func (w *dryWalker) flatten(kind string, b *parse.BranchNode, inner, outer walkCtx) []parse.Node {
	*w.r.dry.pending = true
	out := []parse.Node{w.marker(b.Pos, Placeholder(kind+" "+pipeSource(b.Pipe)))}
	w.list(b.List, inner)
	if b.List != nil {
		out = append(out, b.List.Nodes...)
	}
	if b.ElseList != nil {
		w.list(b.ElseList, outer)
		out = append(out, w.marker(b.Pos, Placeholder("else")))
		out = append(out, b.ElseList.Nodes...)
	}
	return append(out, w.marker(b.Pos, Placeholder("end")))
}

// marker is the text node of a marker a preview shows in a template's text
// (⟨if .x⟩, ⟨else⟩, ⟨end⟩, ⟨break⟩): in a command, a stand-in that fill
// replaces, so that the shell text around it is parsed without it.
func (w *dryWalker) marker(pos parse.Pos, text string) *parse.TextNode {
	if w.r.values != nil {
		text = w.r.values.marker(text)
	}
	return textNode(pos, text)
}

// declare records the variables a pipeline declares: pending with path, or
// known when path is "".
func (w *dryWalker) declare(decl []*parse.VariableNode, path string) {
	for _, d := range decl {
		name := d.Ident[0]
		if path == "" {
			delete(w.vars, name)
		} else {
			w.vars[name] = path
		}
	}
}

// pipe checks the references of a pipeline and reports whether it reads a
// value only a run knows.
func (w *dryWalker) pipe(p *parse.PipeNode, c walkCtx) bool {
	if p == nil {
		return false
	}
	pending := false
	for _, cmd := range p.Cmds {
		if name, ok := stepCall(cmd); ok {
			if w.ref(cmd.Args[1], name, nil) {
				pending = true
			}
		}
		for _, a := range cmd.Args {
			if w.arg(a, c) {
				pending = true
			}
		}
	}
	return pending
}

// stepCall is the name of {{step "name"}}.
func stepCall(cmd *parse.CommandNode) (string, bool) {
	if len(cmd.Args) < 2 {
		return "", false
	}
	if id, ok := cmd.Args[0].(*parse.IdentifierNode); !ok || id.Ident != "step" {
		return "", false
	}
	s, ok := cmd.Args[1].(*parse.StringNode)
	if !ok {
		return "", false
	}
	return s.Text, true
}

// chainStep is the name of (step "name").key...
func chainStep(ch *parse.ChainNode) (string, bool) {
	p, ok := ch.Node.(*parse.PipeNode)
	if !ok || len(p.Cmds) != 1 || len(p.Decl) > 0 {
		return "", false
	}
	return stepCall(p.Cmds[0])
}

func (w *dryWalker) arg(a parse.Node, c walkCtx) bool {
	switch a := a.(type) {
	case *parse.FieldNode:
		switch c.dot {
		case dotTop:
			return w.ref(a, a.Ident[0], a.Ident[1:])
		case dotPending:
			return true
		}
	case *parse.DotNode:
		return c.dot == dotPending
	case *parse.VariableNode:
		if _, ok := w.vars[a.Ident[0]]; ok {
			return true
		}
		if a.Ident[0] == "$" && len(a.Ident) > 1 && c.main {
			return w.ref(a, a.Ident[1], a.Ident[2:])
		}
	case *parse.ChainNode:
		if name, ok := chainStep(a); ok {
			return w.ref(a, name, a.Field)
		}
		return w.arg(a.Node, c)
	case *parse.PipeNode:
		return w.pipe(a, c)
	}
	return false
}

// ref checks a reference to the scope, root and the keys after it, and
// reports whether its value is one only a run knows.
func (w *dryWalker) ref(n parse.Node, root string, keys []string) bool {
	p := w.r.dry.view
	switch {
	case w.r.dry.known[root]:
		w.known(n, root, keys)
		return false
	case root == "bead":
		if !p.hasBead && len(keys) > 0 {
			w.warn(n, fmt.Sprintf("reads .bead.%s, and no bead is given (--bead-file): a run without a bead stops here", strings.Join(keys, ".")))
			return true
		}
		w.known(n, root, keys)
		return false
	case root == "previous":
		if !p.previous {
			if k := len(p.loops); k > 0 {
				// Defined from the second iteration on: a template may
				// guard it ({{if gt .loop.iteration 1}}), so it is a
				// warning, and the run says it when it is not guarded.
				w.warn(n, (&run{scope: &Scope{Loops: []LoopFrame{{Name: p.loops[k-1]}}}}).missingTop("previous")+" (in the first iteration)")
				return w.result(n, root, keys)
			}
			w.errorf(n, "%s", (&run{}).missingTop("previous"))
			return false
		}
		return w.result(n, root, keys)
	case root == "loop_entry":
		if len(p.loops) == 0 {
			w.errorf(n, "%s", (&run{}).missingTop("loop_entry"))
			return false
		}
		return w.result(n, root, keys)
	case p.ran[root]:
		if (p.ended[root] || p.inLoop(root)) && len(keys) > 0 && keys[0] == "iteration" {
			return w.leaf(n, root, keys)
		}
		return w.result(n, root, keys)
	case p.ended[root] || p.inLoop(root):
		if len(keys) > 0 && keys[0] != "iteration" {
			w.errorf(n, "no key %q in .%s (a loop has only iteration)", keys[0], root)
			return false
		}
		return w.leaf(n, root, keys)
	}
	if _, ok := w.r.data[root]; ok {
		// The goal, a --set variable: known.
		w.known(n, root, keys)
		return false
	}
	if where, ok := p.state.steps[root]; ok {
		msg := fmt.Sprintf("step %q has not run yet at this point (it is at %s)", root, where)
		for i := len(p.loops) - 1; i >= 0; i-- {
			if slices.Contains(p.state.bodies[p.loops[i]], root) {
				// Its result from the iteration before: a warning, as for
				// .previous.
				w.warn(n, msg+fmt.Sprintf("; in loop %q it has a result only from the second iteration on", p.loops[i]))
				return w.result(n, root, keys)
			}
		}
		w.errorf(n, "%s", msg)
		return false
	}
	w.errorf(n, "%s", w.r.missing("."+root, root, true))
	return false
}

// result checks the keys read from a step result.
func (w *dryWalker) result(n parse.Node, root string, keys []string) bool {
	if len(keys) == 0 || keys[0] == "outputs" {
		// outputs holds what the agent reports, under keys it chooses;
		// a key it does not report renders empty.
		if len(keys) > 1 {
			w.r.dry.view.state.addOptional("." + root + ".outputs." + keys[1])
		}
		return true
	}
	k := keys[0]
	if !slices.Contains(resultKeys, k) {
		msg := fmt.Sprintf("no key %q in .%s", k, root)
		if s := suggest.Closest(k, resultKeys); s != "" {
			msg += fmt.Sprintf(" (did you mean %s?)", s)
		} else {
			msg += " (it has " + strings.Join(resultKeys, ", ") + ")"
		}
		w.errorf(n, "%s", msg)
		return false
	}
	return w.leaf(n, root, keys)
}

// leaf checks that nothing is read from a value that is not an object.
func (w *dryWalker) leaf(n parse.Node, root string, keys []string) bool {
	if len(keys) > 1 {
		kind := resultKinds[keys[0]]
		if keys[0] == "iteration" {
			kind = "number"
		}
		w.errorf(n, ".%s.%s is a %s: it has no key %q", root, keys[0], kind, keys[1])
		return false
	}
	return true
}

// known checks the keys read from a known value, as far as they go
// through objects.
func (w *dryWalker) known(n parse.Node, root string, keys []string) {
	cur := w.r.data[root]
	for i, k := range keys {
		m, ok := cur.(map[string]any)
		if !ok {
			return // not an object: the execution says what is wrong
		}
		next, ok := m[k]
		if !ok {
			node := "." + root + "." + strings.Join(keys[:i+1], ".")
			w.errorf(n, "%s", w.r.missing(node, k, true))
			return
		}
		cur = next
	}
}

func (w *dryWalker) line(n parse.Node) string {
	loc, _ := w.tree.ErrorContext(n)
	parts := strings.Split(loc, ":")
	if len(parts) >= 3 {
		return "line " + parts[len(parts)-2] + ": "
	}
	return ""
}

func (w *dryWalker) errorf(n parse.Node, format string, args ...any) {
	msg := w.line(n) + fmt.Sprintf(format, args...)
	if !slices.Contains(w.errs, msg) {
		w.errs = append(w.errs, msg)
	}
}

func (w *dryWalker) warn(n parse.Node, msg string) {
	msg = w.line(n) + msg
	if !slices.Contains(w.warns, msg) {
		w.warns = append(w.warns, msg)
	}
}

// replace makes a pipeline that reads a value only a run knows print its
// placeholder instead (unescaped if it went through raw, as the value
// would).
func (w *dryWalker) replace(p *parse.PipeNode, c walkCtx) {
	*w.r.dry.pending = true
	text := Placeholder(w.pipePath(p, c))
	cmds, hook := unhooked(p)
	first := cmds[0]
	var rawID parse.Node
	for _, cmd := range cmds {
		if id, ok := cmd.Args[0].(*parse.IdentifierNode); ok && id.Ident == "raw" {
			rawID = id
		}
	}
	str := &parse.StringNode{NodeType: parse.NodeString, Pos: first.Pos, Quoted: strconv.Quote(text), Text: text}
	if rawID != nil {
		first.Args = []parse.Node{rawID, str}
	} else {
		first.Args = []parse.Node{str}
	}
	p.Cmds = []*parse.CommandNode{first}
	if hook != nil {
		p.Cmds = append(p.Cmds, hook)
	}
}

// unhooked returns the commands of a pipeline as written, and the _value
// command hookActions added, if any.
func unhooked(p *parse.PipeNode) ([]*parse.CommandNode, *parse.CommandNode) {
	n := len(p.Cmds)
	if n > 1 {
		if id, ok := p.Cmds[n-1].Args[0].(*parse.IdentifierNode); ok && id.Ident == valueFunc {
			return p.Cmds[:n-1], p.Cmds[n-1]
		}
	}
	return p.Cmds, nil
}

// pipePath is what the placeholder of a pipeline shows: the path of the
// value it reads (tests.output), or the expression as written.
func (w *dryWalker) pipePath(p *parse.PipeNode, c walkCtx) string {
	cmds, _ := unhooked(p)
	// raw changes how the value is printed, not which it is.
	var read []*parse.CommandNode
	for _, cmd := range cmds {
		if id, ok := cmd.Args[0].(*parse.IdentifierNode); ok && id.Ident == "raw" {
			if len(cmd.Args) == 1 {
				continue
			}
			cmd = &parse.CommandNode{NodeType: parse.NodeCommand, Pos: cmd.Pos, Args: cmd.Args[1:]}
		}
		read = append(read, cmd)
	}
	if len(read) == 1 {
		if name, ok := stepCall(read[0]); ok && len(read[0].Args) == 2 {
			return name
		}
		if len(read[0].Args) == 1 {
			return w.argPath(read[0].Args[0], c)
		}
	}
	return pipeSource(p)
}

// argPath is the placeholder path of an argument: the path of the value it
// reads, or the argument as written.
func (w *dryWalker) argPath(a parse.Node, c walkCtx) string {
	if path, ok := w.path(a, c); ok {
		return path
	}
	if p, ok := a.(*parse.PipeNode); ok {
		return w.pipePath(p, c)
	}
	return a.String()
}

// path is the placeholder path of a reference.
func (w *dryWalker) path(a parse.Node, c walkCtx) (string, bool) {
	join := func(base string, keys []string) string {
		return strings.Join(append([]string{base}, keys...), ".")
	}
	switch a := a.(type) {
	case *parse.FieldNode:
		if c.dot == dotPending {
			return join(c.path, a.Ident), true
		}
		return strings.Join(a.Ident, "."), true
	case *parse.DotNode:
		return c.path, c.dot == dotPending
	case *parse.VariableNode:
		if base, ok := w.vars[a.Ident[0]]; ok {
			return join(base, a.Ident[1:]), true
		}
		if a.Ident[0] == "$" && len(a.Ident) > 1 {
			return strings.Join(a.Ident[1:], "."), true
		}
	case *parse.ChainNode:
		if name, ok := chainStep(a); ok {
			return join(name, a.Field), true
		}
	}
	return "", false
}

// pipeSource is a pipeline as written, without the hook.
func pipeSource(p *parse.PipeNode) string {
	cmds, _ := unhooked(p)
	parts := make([]string, len(cmds))
	for i, c := range cmds {
		parts[i] = c.String()
	}
	s := strings.Join(parts, " | ")
	if len(p.Decl) > 0 {
		names := make([]string, len(p.Decl))
		for i, d := range p.Decl {
			names[i] = d.String()
		}
		op := " := "
		if p.IsAssign {
			op = " = "
		}
		s = strings.Join(names, ", ") + op + s
	}
	return s
}

func textNode(pos parse.Pos, text string) *parse.TextNode {
	return &parse.TextNode{NodeType: parse.NodeText, Pos: pos, Text: []byte(text)}
}
