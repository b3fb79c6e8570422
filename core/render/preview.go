package render

// Preview: the templates of a grimoire rendered without running it. What
// only a run can know (the result of a step, .previous, .loop_entry, the
// iteration of a loop) is shown as a placeholder, ⟨tests.output⟩, and what
// is known (the goal, --set variables, the bead, inputs) is rendered as a
// run would render it. References are checked against the steps that have
// run at that point of the file, so a typo or a step that comes later is an
// error here rather than a blocked run.

import (
	"errors"
	"fmt"
	"github.com/vibeteam/vibeteam/internal/suggest"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"text/template"
	"text/template/parse"
)

// Placeholder is how a preview shows a value known only at run time:
// Placeholder("tests.output") is ⟨tests.output⟩.
func Placeholder(path string) string { return "⟨" + path + "⟩" }

// resultKeys are the keys of a step result in templates (StepResult.Map).
var resultKeys = slices.Sorted(maps.Keys(StepResult{}.Map()))

// resultKinds names the JSON type of each key of a step result but outputs,
// whose keys the agent chooses.
var resultKinds = map[string]string{
	"output": "string", "summary": "string", "success": "boolean", "failed": "boolean",
	"exit_code": "number", "duration_ms": "number", "changed_files": "array",
	"status": "string",
}

// PreviewScope is the Scope of a preview. The caller walks the steps of the
// grimoire in file order as the interpreter would, telling it what has run
// (Record, EnterLoop, ExitLoop), and renders each step's templates on the
// way. Unlike a Scope, it holds no results: a step that has run is known to
// have one, and reading it renders a placeholder. Each render returns its
// warnings and its error; an error may join several problems (errors.Join),
// each naming the step and field. A PreviewScope is not safe for concurrent
// use.
type PreviewScope struct {
	goal     string
	workflow string
	vars     map[string]string
	bead     map[string]any
	hasBead  bool
	// steps are every step and alias of the grimoire, with where they are,
	// so that reading one before it has run says so.
	steps map[string]string
	// ran are the steps and aliases that have run by this point.
	ran map[string]bool
	// ended are the loops that have ended; their .iteration stays.
	ended    map[string]bool
	loops    []previewLoop
	previous bool // .previous is defined
	// optional are the output keys the templates read (.impl.outputs.KEY):
	// empty, with a warning, when the agent does not report them. Shared
	// by the snapshots.
	optional *[]string
}

func (p *PreviewScope) addOptional(path string) {
	if !slices.Contains(*p.optional, path) {
		*p.optional = append(*p.optional, path)
	}
}

// Optional lists, sorted, the keys of agents' outputs the templates read
// so far (.impl.outputs.KEY): an agent may leave one out, and it then
// renders empty, with a warning.
func (p *PreviewScope) Optional() []string {
	return slices.Sorted(slices.Values(*p.optional))
}

type previewLoop struct {
	name string
	// body are the names of the loop's steps: from the second iteration
	// on, they have a result from the iteration before.
	body []string
	// entry: a step had run before the loop (.previous after a loop in
	// which no step ran).
	entry bool
}

// NewPreviewScope returns the scope of a preview with the goal, the --set
// variables and the bead (nil: none, and .bead is an empty object as in a
// run without one; a template reading a key of it is warned about).
func NewPreviewScope(goal string, vars map[string]string, bead map[string]any) *PreviewScope {
	p := &PreviewScope{
		goal:     goal,
		vars:     maps.Clone(vars),
		steps:    map[string]string{},
		ran:      map[string]bool{},
		ended:    map[string]bool{},
		hasBead:  bead != nil,
		optional: new([]string),
	}
	p.bead, _ = copyValue(bead).(map[string]any)
	return p
}

// SetWorkflow sets the grimoire's name, {{.workflow.name}}.
func (p *PreviewScope) SetWorkflow(name string) { p.workflow = name }

// Declare tells the preview, before the walk, of a step of the grimoire,
// its `output` alias ("" for none) and where it is ("line 12"), so that a
// template reading it before it has run is told where it comes.
func (p *PreviewScope) Declare(name, alias, where string) {
	for _, n := range []string{name, alias} {
		if _, ok := p.steps[n]; n != "" && !ok {
			p.steps[n] = where
		}
	}
}

// Record marks the step (and its alias) as run: the steps after it can
// read its result, and it is .previous.
func (p *PreviewScope) Record(name, alias string) {
	p.ran[name] = true
	if alias != "" {
		p.ran[alias] = true
	}
	p.previous = true
}

// EnterLoop starts loop name, whose steps (nested ones included, with their
// aliases) are body. As in a run, .previous is undefined until a step of
// the loop has run, and .loop_entry is defined.
func (p *PreviewScope) EnterLoop(name string, body []string) {
	entry := p.previous
	if n := len(p.loops); n > 0 {
		entry = entry || p.loops[n-1].entry
	}
	p.loops = append(p.loops, previewLoop{name: name, body: body, entry: entry})
	p.previous = false
}

// ExitLoop ends the innermost loop; its .iteration stays readable.
func (p *PreviewScope) ExitLoop() {
	n := len(p.loops)
	if n == 0 {
		return
	}
	f := p.loops[n-1]
	p.loops = p.loops[:n-1]
	p.ended[f.name] = true
	p.previous = p.previous || f.entry
}

// snapshot is a copy of p for one rendering: a rendering abandoned at its
// time limit may still read it while the walk goes on.
func (p *PreviewScope) snapshot() *PreviewScope {
	c := *p
	c.vars = maps.Clone(p.vars)
	c.steps = maps.Clone(p.steps)
	c.ran = maps.Clone(p.ran)
	c.ended = maps.Clone(p.ended)
	c.loops = slices.Clone(p.loops)
	return &c
}

// inLoop reports whether loop name is running.
func (p *PreviewScope) inLoop(name string) bool {
	return slices.ContainsFunc(p.loops, func(f previewLoop) bool { return f.name == name })
}

// data is what templates execute on, as Scope.data builds it, with a
// placeholder for every value only a run knows. The templates' references
// to them are replaced before execution (see previewWalker); these are for
// what reaches them another way ({{index . "previous"}}, {{step "x"}}).
func (p *PreviewScope) data(step string) map[string]any {
	d := make(map[string]any, len(p.vars)+len(p.ran)+8)
	d["goal"] = p.goal
	for k, v := range p.vars {
		d[k] = v
	}
	for name := range p.ran {
		d[name] = placeholderResult(name)
	}
	loop := func(name string) {
		m := map[string]any{}
		if r, ok := d[name].(map[string]any); ok {
			m = maps.Clone(r)
		}
		m["iteration"] = Placeholder(name + ".iteration")
		d[name] = m
	}
	for name := range p.ended {
		loop(name)
	}
	for _, f := range p.loops {
		loop(f.name)
	}
	d["bead"] = copyValue(beadView(p.bead))
	d["workflow"] = map[string]any{"name": p.workflow}
	d["step"] = map[string]any{"name": step}
	delete(d, "previous")
	if p.previous {
		d["previous"] = placeholderResult("previous")
	}
	delete(d, "loop_entry")
	if len(p.loops) > 0 {
		d["loop_entry"] = placeholderResult("loop_entry")
	}
	delete(d, "spell_content")
	return d
}

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

// When checks the `when` of a step. When its value depends only on what is
// known (the goal, variables, the bead), it is evaluated: result is "true"
// or "false". Otherwise result is "" (decided at run time).
func (p *PreviewScope) When(step, expr string) (result string, warnings []string, err error) {
	if strings.TrimSpace(expr) == "" {
		return "true", nil, nil
	}
	field := fmt.Sprintf("when %q", expr)
	v := p.newRun(modeText, p.data(step), nil, nil, nil)
	out, pending, warns, err := v.renderLimited("when", expr)
	warnings = placeAll(step, field, expr, warns)
	if err != nil {
		return "", warnings, placeErrors(step, field, expr, err)
	}
	if pending {
		return "", warnings, nil
	}
	switch t := strings.TrimSpace(out); t {
	case "true", "false":
		return t, warnings, nil
	}
	return "", warnings, fmt.Errorf("step %q: %s: must be true or false, got %s", step, field, describe(v.printed, out))
}

// Render is Scope.Render for a preview: text with placeholders for what
// only a run knows.
func (p *PreviewScope) Render(step, field, text string) (string, []string, error) {
	v := p.newRun(modeText, p.data(step), nil, nil, nil)
	out, _, warns, err := v.renderLimited(field, text)
	if err != nil {
		return "", placeAll(step, field, text, warns), placeErrors(step, field, text, err)
	}
	return out, placeAll(step, field, text, warns), nil
}

// RenderInputs is Scope.RenderInputs for a preview. Every input is
// rendered, so that every problem is found; one that fails is left out of
// the map.
func (p *PreviewScope) RenderInputs(step string, input map[string]string) (map[string]string, []string, error) {
	out := make(map[string]string, len(input))
	var warnings []string
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(input)) {
		v, w, err := p.Render(step, "input."+k, input[k])
		warnings = append(warnings, w...)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out[k] = v
	}
	return out, warnings, errors.Join(errs...)
}

// Command is Scope.Command for a preview: the command of a script step
// with each value quoted for where it lands as the run will, a placeholder
// included, and the warnings of CommandWarnings.
func (p *PreviewScope) Command(step, text string) (string, []string, error) {
	warnings, err := CommandWarnings(step, text)
	if err != nil {
		return "", warnings, err
	}
	if !strings.Contains(text, "{{") {
		return text, warnings, nil
	}
	v := p.newRun(modeCommand, p.data(step), nil, nil, nil)
	v.values = newCommandValues()
	out, _, warns, err := v.renderLimited("command", text)
	warnings = append(warnings, placeAll(step, "command", text, warns)...)
	if err == nil {
		out, err = v.values.fill(out, v.actions)
	}
	if err != nil {
		return "", warnings, placeErrors(step, "command", text, err)
	}
	return out, warnings, nil
}

// PromptPreview is the prompt of an agent step as a preview renders it.
type PromptPreview struct {
	Spell   Spell  // the spell as found: its name and where it came from
	Content string // the spell rendered
	System  Spell  // the system prompt that wraps the spell
	Prompt  string // the whole prompt, system prompt included
}

// AgentPrompt is Scope.AgentPrompt for a preview: the spell rendered with
// the scope and the step's rendered inputs, then the system prompt around
// it.
func (p *PreviewScope) AgentPrompt(step string, spells *Spells, spell string, inputs map[string]string) (PromptPreview, []string, error) {
	var pp PromptPreview
	sp, err := spells.Load(spell)
	if err != nil {
		return pp, nil, fmt.Errorf("step %q: %v", step, err)
	}
	pp.Spell = sp
	data := p.data(step)
	known := map[string]bool{}
	for _, k := range slices.Sorted(maps.Keys(inputs)) {
		if IsReserved(k) {
			return pp, nil, fmt.Errorf("step %q: input %q: the name is reserved (%s)", step, k, strings.Join(ReservedNames, ", "))
		}
		data[k] = inputs[k]
		known[k] = true
	}
	var warnings []string
	prefix := func(ws []string, what string) {
		for _, w := range ws {
			warnings = append(warnings, fmt.Sprintf("step %q: %s: %s", step, what, w))
		}
	}
	v := p.newRun(modeText, data, known, spells, []string{chainName(sp)})
	content, _, warns, err := v.renderLimited("spell", sp.Text)
	prefix(warns, sp.label())
	if err != nil {
		return pp, warnings, joinPrefixed(fmt.Sprintf("step %q: %s: ", step, sp.label()), err)
	}
	pp.Content = content
	sys, err := spells.SystemPrompt()
	if err != nil {
		return pp, warnings, fmt.Errorf("step %q: %v", step, err)
	}
	pp.System = sys
	sysData := maps.Clone(data)
	sysData["spell_content"] = strings.TrimSpace(content)
	sysKnown := maps.Clone(known)
	sysKnown["spell_content"] = true
	v = p.newRun(modeText, sysData, sysKnown, spells, []string{sys.Name})
	out, _, warns, err := v.renderLimited("system", sys.Text)
	prefix(warns, "system prompt ("+sys.Source+")")
	if err != nil {
		return pp, warnings, joinPrefixed(fmt.Sprintf("step %q: system prompt (%s): ", step, sys.Source), err)
	}
	pp.Prompt = out
	return pp, warnings, nil
}

// previewRun is one rendering of a preview: a run whose templates have
// their run-time values replaced by placeholders before they execute.
type previewRun struct {
	*run
	p *PreviewScope
	// known are the names of the data that are known values whatever the
	// scope says: a spell's inputs, the arguments of an include.
	known map[string]bool
	// warnings are the run's, those of its partials included (named by
	// include); pending is shared with the partials.
	warnings *[]string
	pending  *bool
}

func (p *PreviewScope) newRun(m mode, data map[string]any, known map[string]bool, spells *Spells, chain []string) *previewRun {
	if known == nil {
		known = map[string]bool{}
	}
	return &previewRun{
		run:      &run{mode: m, data: data, spells: spells, chain: chain},
		p:        p.snapshot(),
		known:    known,
		warnings: new([]string),
		pending:  new(bool),
	}
}

// previewErrors are the problems a template has before it runs: each is
// "line N: message".
type previewErrors []string

func (e previewErrors) Error() string { return strings.Join(e, "; ") }

// renderLimited is run.renderLimited for a preview. pending reports whether
// a value only a run knows was met.
func (v *previewRun) renderLimited(name, text string) (out string, pending bool, warnings []string, err error) {
	v.stop = new(atomic.Bool)
	out, err = limited(v.stop, func() (string, error) { return v.render(name, text) })
	if err != nil && v.stop.Load() {
		return "", false, nil, err
	}
	return out, *v.pending, *v.warnings, err
}

// parse is run.parse with include replaced by the preview's.
func (v *previewRun) parse(name, text string) (*template.Template, error) {
	text, err := rewriteIncludes(text)
	if err != nil {
		return nil, err
	}
	fm := v.funcs()
	if v.spells != nil {
		fm["include"] = v.include
	}
	t, err := template.New(name).Option("missingkey=error").Funcs(fm).Parse(text)
	if err != nil {
		return nil, errors.New(cleanMessage(err.Error()))
	}
	v.actions = nil
	for _, tt := range t.Templates() {
		if tt.Tree != nil {
			hookActions(tt.Tree, tt.Tree.Root, &v.actions)
		}
	}
	return t, nil
}

// render parses text, checks and rewrites its references, and executes it.
func (v *previewRun) render(name, text string) (string, error) {
	t, err := v.parse(name, text)
	if err != nil {
		return "", err
	}
	var errs previewErrors
	for _, tt := range t.Templates() {
		if tt.Tree == nil {
			continue
		}
		main := tt.Name() == t.Name()
		w := &previewWalker{v: v, tree: tt.Tree, vars: map[string]string{}}
		c := walkCtx{dot: dotTop, main: main}
		if !main {
			c.dot = dotOther // a defined template's dot is what it is given
		}
		w.list(tt.Tree.Root, c)
		errs = append(errs, w.errs...)
		for _, msg := range w.warns {
			if !slices.Contains(*v.warnings, msg) {
				*v.warnings = append(*v.warnings, msg)
			}
		}
	}
	if len(errs) > 0 {
		return "", errs
	}
	out := &limitedBuffer{max: maxOutput}
	if err := t.Execute(out, v.data); err != nil {
		return "", v.explain(t, err)
	}
	return out.String(), nil
}

// include is run.include for a preview: the partial's references are
// checked and rewritten as its caller's are.
func (v *previewRun) include(name string, kv ...any) (string, error) {
	if v.stopped() {
		return "", errStopped
	}
	if err := checkName(name); err != nil {
		return "", &funcError{fmt.Sprintf("include %q: %v", name, err)}
	}
	file := fileName(name)
	if slices.Contains(v.chain, file) {
		return "", cycleError(v.chain, file)
	}
	if len(v.chain) > maxIncludeDepth {
		return "", depthError(v.chain, file)
	}
	if len(kv)%2 != 0 {
		return "", &funcError{fmt.Sprintf("include %q: the arguments after the name must be pairs of a key and a value", name)}
	}
	data := maps.Clone(v.data)
	known := maps.Clone(v.known)
	for i := 0; i < len(kv); i += 2 {
		k, ok := kv[i].(string)
		if !ok {
			return "", &funcError{fmt.Sprintf("include %q: argument %d must be a key (a string), not %s", name, i+2, kindOf(kv[i], ""))}
		}
		data[k] = kv[i+1]
		known[k] = true
	}
	sp, err := v.spells.find(file, "partial")
	if err != nil {
		return "", &funcError{err.Error()}
	}
	child := &previewRun{run: v.child(data, file), p: v.p, known: known, warnings: new([]string), pending: v.pending}
	out, err := child.render("partial", sp.Text)
	for _, w := range *child.warnings {
		w = fmt.Sprintf("include %q (%s): %s", strings.TrimSuffix(file, ".md"), sp.Source, w)
		if !slices.Contains(*v.warnings, w) {
			*v.warnings = append(*v.warnings, w)
		}
	}
	if err != nil {
		var ce *chainError
		if errors.As(err, &ce) || errors.Is(err, errStopped) {
			return "", err
		}
		return "", &includeError{fmt.Sprintf("include %q (%s): %v", strings.TrimSuffix(file, ".md"), sp.Source, err)}
	}
	return out, nil
}

// placeErrors is placeError for each problem of err.
func placeErrors(step, field, text string, err error) error {
	var pe previewErrors
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

// placeAll is placeError for warnings.
func placeAll(step, field, text string, warnings []string) []string {
	out := make([]string, len(warnings))
	for i, w := range warnings {
		out[i] = placeError(step, field, text, errors.New(w)).Error()
	}
	return out
}

// joinPrefixed puts prefix in front of each problem of err.
func joinPrefixed(prefix string, err error) error {
	var pe previewErrors
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

// previewWalker checks the references of one template against the scope
// of the preview and replaces those to values only a run knows with
// placeholders: an action that prints one prints ⟨tests.output⟩ (or, for
// an expression, ⟨printf "%q" .tests.output⟩); an if, with or range that
// depends on one shows its branches one after the other between markers,
// ⟨if .previous.failed⟩...⟨else⟩...⟨end⟩.
type previewWalker struct {
	v    *previewRun
	tree *parse.Tree
	// vars are the variables that hold a value only a run knows, with the
	// path their placeholders show.
	vars  map[string]string
	errs  []string
	warns []string
}

func (w *previewWalker) list(l *parse.ListNode, c walkCtx) {
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
func (w *previewWalker) node(n parse.Node, c walkCtx) []parse.Node {
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
			*w.v.pending = true
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
func (w *previewWalker) includeArgs(p *parse.PipeNode, c walkCtx) bool {
	cmds, _ := unhooked(p)
	if len(cmds) != 1 || len(p.Decl) > 0 {
		return false
	}
	if id, ok := cmds[0].Args[0].(*parse.IdentifierNode); !ok || id.Ident != "include" {
		return false
	}
	*w.v.pending = true
	for i, a := range cmds[0].Args[1:] {
		if w.arg(a, c) {
			text := Placeholder(w.argPath(a, c))
			cmds[0].Args[i+1] = &parse.StringNode{NodeType: parse.NodeString, Pos: a.Position(), Quoted: strconv.Quote(text), Text: text}
		}
	}
	return true
}

// flatten shows both branches of a node whose condition only a run knows.
func (w *previewWalker) flatten(kind string, b *parse.BranchNode, inner, outer walkCtx) []parse.Node {
	*w.v.pending = true
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
func (w *previewWalker) marker(pos parse.Pos, text string) *parse.TextNode {
	if w.v.values != nil {
		text = w.v.values.marker(text)
	}
	return textNode(pos, text)
}

// declare records the variables a pipeline declares: pending with path, or
// known when path is "".
func (w *previewWalker) declare(decl []*parse.VariableNode, path string) {
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
func (w *previewWalker) pipe(p *parse.PipeNode, c walkCtx) bool {
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

func (w *previewWalker) arg(a parse.Node, c walkCtx) bool {
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
func (w *previewWalker) ref(n parse.Node, root string, keys []string) bool {
	p := w.v.p
	switch {
	case w.v.known[root]:
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
				w.warn(n, (&run{scope: &Scope{Loops: []LoopFrame{{Name: p.loops[k-1].name}}}}).missingTop("previous")+" (in the first iteration)")
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
	if _, ok := w.v.data[root]; ok {
		// The goal, a --set variable: known.
		w.known(n, root, keys)
		return false
	}
	if where, ok := p.steps[root]; ok {
		msg := fmt.Sprintf("step %q has not run yet at this point (it is at %s)", root, where)
		for i := len(p.loops) - 1; i >= 0; i-- {
			if slices.Contains(p.loops[i].body, root) {
				// Its result from the iteration before: a warning, as for
				// .previous.
				w.warn(n, msg+fmt.Sprintf("; in loop %q it has a result only from the second iteration on", p.loops[i].name))
				return w.result(n, root, keys)
			}
		}
		w.errorf(n, "%s", msg)
		return false
	}
	w.errorf(n, "%s", w.v.missing("."+root, root, true))
	return false
}

// result checks the keys read from a step result.
func (w *previewWalker) result(n parse.Node, root string, keys []string) bool {
	if len(keys) == 0 || keys[0] == "outputs" {
		// outputs holds what the agent reports, under keys it chooses;
		// a key it does not report renders empty.
		if len(keys) > 1 {
			w.v.p.addOptional("." + root + ".outputs." + keys[1])
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
func (w *previewWalker) leaf(n parse.Node, root string, keys []string) bool {
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
func (w *previewWalker) known(n parse.Node, root string, keys []string) {
	cur := w.v.data[root]
	for i, k := range keys {
		m, ok := cur.(map[string]any)
		if !ok {
			return // not an object: the execution says what is wrong
		}
		next, ok := m[k]
		if !ok {
			node := "." + root + "." + strings.Join(keys[:i+1], ".")
			w.errorf(n, "%s", w.v.missing(node, k, true))
			return
		}
		cur = next
	}
}

func (w *previewWalker) line(n parse.Node) string {
	loc, _ := w.tree.ErrorContext(n)
	parts := strings.Split(loc, ":")
	if len(parts) >= 3 {
		return "line " + parts[len(parts)-2] + ": "
	}
	return ""
}

func (w *previewWalker) errorf(n parse.Node, format string, args ...any) {
	msg := w.line(n) + fmt.Sprintf(format, args...)
	if !slices.Contains(w.errs, msg) {
		w.errs = append(w.errs, msg)
	}
}

func (w *previewWalker) warn(n parse.Node, msg string) {
	msg = w.line(n) + msg
	if !slices.Contains(w.warns, msg) {
		w.warns = append(w.warns, msg)
	}
}

// replace makes a pipeline that reads a value only a run knows print its
// placeholder instead (unescaped if it went through raw, as the value
// would).
func (w *previewWalker) replace(p *parse.PipeNode, c walkCtx) {
	*w.v.pending = true
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
func (w *previewWalker) pipePath(p *parse.PipeNode, c walkCtx) string {
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
func (w *previewWalker) argPath(a parse.Node, c walkCtx) string {
	if path, ok := w.path(a, c); ok {
		return path
	}
	if p, ok := a.(*parse.PipeNode); ok {
		return w.pipePath(p, c)
	}
	return a.String()
}

// path is the placeholder path of a reference.
func (w *previewWalker) path(a parse.Node, c walkCtx) (string, bool) {
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
