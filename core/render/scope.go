package render

import (
	"fmt"
	"github.com/vibeteam/vibeteam/internal/suggest"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// StepResult is what a finished step leaves for the steps after it. In
// templates it is an object with the JSON names below ({{.tests.output}},
// {{.fix.outputs.key}}); every key is always there, so that a misspelt one
// is an error rather than an empty value. It is stored in sessions as JSON.
type StepResult struct {
	Output       string         `json:"output"`
	Success      bool           `json:"success"`
	Failed       bool           `json:"failed"`
	ExitCode     int            `json:"exit_code"`
	Summary      string         `json:"summary,omitempty"`
	Outputs      map[string]any `json:"outputs,omitempty"`
	DurationMS   int64          `json:"duration_ms"`
	ChangedFiles []string       `json:"changed_files,omitempty"`
}

// Map is the result as templates see it.
func (r StepResult) Map() map[string]any {
	outputs := r.Outputs
	if outputs == nil {
		outputs = map[string]any{}
	}
	files := r.ChangedFiles
	if files == nil {
		files = []string{}
	}
	verdict := "failed"
	if r.Success {
		verdict = "success"
	}
	return map[string]any{
		"status":        verdict,
		"output":        r.Output,
		"success":       r.Success,
		"failed":        r.Failed,
		"exit_code":     r.ExitCode,
		"summary":       r.Summary,
		"outputs":       outputs,
		"duration_ms":   r.DurationMS,
		"changed_files": files,
	}
}

// ReservedNames are the names of the scope that vibeteam defines. A step, an
// output alias, a loop or an input with one of them would hide it, so the
// workflow validation refuses them (IsReserved). A --set goal=... may
// override the goal, as it does for stage prompts.
var ReservedNames = []string{"goal", "bead", "previous", "loop_entry", "spell_content", "workflow", "step"}

// IsReserved reports whether name is one of ReservedNames.
func IsReserved(name string) bool { return slices.Contains(ReservedNames, name) }

// Scope is the set of variables the templates of a grimoire see: spells,
// `input`, `when` and `command`. The interpreter owns one per run, records
// each finished step in it, and stores it in the session (it is plain JSON)
// so that a resumed run sees what the interrupted one saw.
//
// In a template:
//
//	{{.goal}}, {{.name}}             the goal, --set variables
//	{{.bead.title}}                  the bead (an empty object without one);
//	                                 .bead.body and .bead.type are coven's
//	                                 names of description and issue_type
//	{{.workflow.name}}               the grimoire's name
//	{{.step.name}}                   the name of the step being rendered
//	{{.tests.output}}                a finished step, by name or `output` alias:
//	                                 output success failed status exit_code
//	                                 summary outputs duration_ms changed_files
//	                                 (status: "success" or "failed", coven's)
//	{{(step "run-tests").output}}    the same, for a name with a hyphen
//	{{.previous.failed}}             the step that ran last
//	{{.loop_entry.output}}           inside a loop, the step before the loop
//	{{.quality.iteration}}           the iteration of loop "quality", from 1
//
// Strings render as they are, lists and objects as JSON, null as nothing. A
// Scope is not safe for concurrent use.
type Scope struct {
	Goal string `json:"goal,omitempty"`
	// Workflow is the grimoire's name: {{.workflow.name}}.
	Workflow string            `json:"workflow,omitempty"`
	Vars     map[string]string `json:"vars,omitempty"`
	Bead     map[string]any    `json:"bead,omitempty"`
	// Steps holds the latest result of each step by name; a step run again
	// in a later iteration replaces its earlier result.
	Steps map[string]StepResult `json:"steps,omitempty"`
	// Aliases maps an `output` alias to its step's name (stored once: an
	// output can be large, and the session is rewritten often).
	Aliases map[string]string `json:"aliases,omitempty"`
	// Previous names the step .previous is; "" leaves it undefined.
	Previous string `json:"previous,omitempty"`
	// Loops are the loops being run, outermost first.
	Loops []LoopFrame `json:"loops,omitempty"`
	// Iterations keeps the last iteration of each loop that has ended, so
	// {{.quality.iteration}} still answers after the loop.
	Iterations map[string]int `json:"iterations,omitempty"`
	// Warn, if set, is told of each warning of a rendering of step's
	// templates: an output key the agent did not report, rendered empty.
	// Command returns its warnings instead.
	Warn func(step, warning string) `json:"-"`
	// Extra holds variables set for one rendering only, never stored:
	// {{.conflict}} for the resolution of a merge conflict.
	Extra map[string]any `json:"-"`
	// dry makes it the scope of a preview (NewDryScope).
	dry *dryState
}

// warnf passes the warnings of a spell's rendering to Warn, as
// `step "x": spell review.md: line 3: .findings.outputs.issues is empty...`.
func (s *Scope) warnf(step, what string, warnings []string) {
	if s.Warn == nil {
		return
	}
	for _, w := range warnings {
		s.Warn(step, fmt.Sprintf("step %q: %s: %s", step, what, w))
	}
}

// warn passes the warnings of a rendering to Warn.
func (s *Scope) warn(step, field, text string, warnings []string) {
	if s.Warn == nil {
		return
	}
	for _, w := range warnings {
		s.Warn(step, placeError(step, field, text, fmt.Errorf("%s", w)).Error())
	}
}

// LoopFrame is a loop being run.
type LoopFrame struct {
	Name      string `json:"name"`
	Iteration int    `json:"iteration"`
	// Entry names the step that ran before the loop ("" if none did); it
	// is .loop_entry inside the loop.
	Entry string `json:"entry,omitempty"`
}

// NewScope returns the scope of a run with its goal and --set variables.
func NewScope(goal string, vars map[string]string) *Scope {
	return &Scope{Goal: goal, Vars: maps.Clone(vars)}
}

// SetBead sets the bead the run works on (.bead).
func (s *Scope) SetBead(bead map[string]any) {
	s.Bead, _ = copyValue(bead).(map[string]any)
}

// Record stores the result of a finished step under its name and, if alias
// is not empty, its `output` alias, and makes it .previous. A skipped step
// is not recorded: .previous is the step that ran last.
func (s *Scope) Record(name, alias string, r StepResult) {
	if s.Steps == nil {
		s.Steps = map[string]StepResult{}
	}
	// The scope keeps its own copy: a template renders in a goroutine that
	// may be abandoned, and must never see a map the caller changes.
	r.Outputs, _ = copyValue(r.Outputs).(map[string]any)
	r.ChangedFiles = slices.Clone(r.ChangedFiles)
	s.Steps[name] = r
	if alias != "" && alias != name {
		if s.Aliases == nil {
			s.Aliases = map[string]string{}
		}
		s.Aliases[alias] = name
	}
	s.Previous = name
}

// Result returns the latest result of a step, by name or alias.
func (s *Scope) Result(name string) (StepResult, bool) {
	if r, ok := s.Steps[name]; ok {
		return r, true
	}
	if n, ok := s.Aliases[name]; ok {
		r, ok := s.Steps[n]
		return r, ok
	}
	return StepResult{}, false
}

// SetPrevious makes the recorded step name .previous; "" makes .previous
// undefined. Record already does this; it is for an interpreter that wants
// otherwise (a resume, a stage of parallel tasks).
func (s *Scope) SetPrevious(name string) { s.Previous = name }

// EnterLoop starts loop name: .loop_entry becomes the step that ran last (or,
// for a loop that starts another loop's iteration, that loop's entry), and
// .previous is undefined until a step of the loop has run.
func (s *Scope) EnterLoop(name string) {
	entry := s.Previous
	if entry == "" && len(s.Loops) > 0 {
		entry = s.Loops[len(s.Loops)-1].Entry
	}
	s.Loops = append(s.Loops, LoopFrame{Name: name, Entry: entry})
	s.Previous = ""
}

// NextIteration starts the next iteration of the innermost loop and returns
// its number, counted from 1. .previous is left alone: on the first step of
// iteration N > 1 it is the last step of iteration N-1.
func (s *Scope) NextIteration() int {
	if len(s.Loops) == 0 {
		return 0
	}
	f := &s.Loops[len(s.Loops)-1]
	f.Iteration++
	return f.Iteration
}

// ExitLoop ends the innermost loop. .previous stays the last step run in it;
// if none ran, it is the step before the loop again.
func (s *Scope) ExitLoop() {
	if len(s.Loops) == 0 {
		return
	}
	f := s.Loops[len(s.Loops)-1]
	s.Loops = s.Loops[:len(s.Loops)-1]
	if s.Iterations == nil {
		s.Iterations = map[string]int{}
	}
	s.Iterations[f.Name] = f.Iteration
	if s.Previous == "" {
		s.Previous = f.Entry
	}
}

// data builds the map templates execute on, for the templates of step.
// Later entries hide earlier ones: variables, then step results (a step is
// more specific than a --set), then loops, then the reserved names.
func (s *Scope) data(step string) map[string]any {
	d := make(map[string]any, len(s.Vars)+len(s.Steps)+len(s.Aliases)+8)
	// A dry scope's values only a run knows are placeholders. A template's
	// references to them are replaced before it executes (see dryWalker);
	// these are for what reaches them another way ({{index . "previous"}}).
	result := func(name string, r StepResult) map[string]any {
		if s.dry != nil {
			return placeholderResult(name)
		}
		return r.Map()
	}
	d["goal"] = s.Goal
	for k, v := range s.Vars {
		d[k] = v
	}
	for name, r := range s.Steps {
		d[name] = result(name, r)
	}
	for alias, name := range s.Aliases {
		if r, ok := s.Steps[name]; ok {
			d[alias] = result(alias, r)
		}
	}
	loop := func(name string, iteration int) {
		m := map[string]any{}
		if r, ok := d[name].(map[string]any); ok {
			m = maps.Clone(r)
		}
		m["iteration"] = iteration
		if s.dry != nil {
			m["iteration"] = Placeholder(name + ".iteration")
		}
		d[name] = m
	}
	for name, n := range s.Iterations {
		loop(name, n)
	}
	for _, f := range s.Loops {
		loop(f.Name, f.Iteration)
	}
	for k, v := range s.Extra {
		d[k] = v
	}
	d["bead"] = beadView(s.Bead)
	d["workflow"] = map[string]any{"name": s.Workflow}
	d["step"] = map[string]any{"name": step}
	delete(d, "previous")
	if r, ok := s.Steps[s.Previous]; ok {
		d["previous"] = result("previous", r)
	}
	delete(d, "loop_entry")
	if len(s.Loops) > 0 {
		// Always there inside a loop; empty when the loop is the first step.
		entry := StepResult{}
		if r, ok := s.Steps[s.Loops[len(s.Loops)-1].Entry]; ok {
			entry = r
		}
		d["loop_entry"] = result("loop_entry", entry)
	}
	delete(d, "spell_content")
	return d
}

// names lists the steps and aliases of the scope, for "did you mean".
func (s *Scope) names() []string {
	var n []string
	for k := range s.Steps {
		n = append(n, k)
	}
	for k := range s.Aliases {
		n = append(n, k)
	}
	slices.Sort(n)
	return n
}

// Render renders text (an `input` value, say) against the scope. step and
// field name the place in errors: `step "fix": input.test_output: no key
// "outptu" in .tests (did you mean output?)`.
func (s *Scope) Render(step, field, text string) (string, error) {
	if !strings.Contains(text, "{{") {
		return text, nil
	}
	r := s.newRun(modeText, s.data(step))
	out, err := r.renderLimited(field, text)
	if err != nil {
		return "", placeErrors(step, field, text, err)
	}
	s.warn(step, field, text, *r.warnings)
	return out, nil
}

// RenderInputs renders the `input` map of a step, each value as
// Render(step, "input.KEY", value).
func (s *Scope) RenderInputs(step string, input map[string]string) (map[string]string, error) {
	out := make(map[string]string, len(input))
	for _, k := range slices.Sorted(maps.Keys(input)) {
		v, err := s.Render(step, "input."+k, input[k])
		if err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, nil
}

// placeError puts the step and field in front of a rendering error. The
// line is dropped from errors of one-line text, where it says nothing.
func placeError(step, field, text string, err error) error {
	msg := err.Error()
	if !strings.Contains(text, "\n") {
		if rest, ok := strings.CutPrefix(msg, "line 1: "); ok {
			msg = rest
		} else if rest, ok := strings.CutPrefix(msg, "line 1, "); ok {
			msg = rest
		}
	}
	prefix := fmt.Sprintf("step %q: ", step)
	if field != "" {
		prefix += field + ": "
	}
	return fmt.Errorf("%s%s", prefix, msg)
}

// stepChainRE matches the node of a missing key reached through step:
// (step "run-tests").outptu
var stepChainRE = regexp.MustCompile(`^\(step ("(?:[^"\\]|\\.)*")\)((?:\.[^.]+)+)$`)

// fieldChain reads node, the template text of a field chain (".tests.output",
// "$.bead.title", `(step "run-tests").output`): the value it starts from,
// the keys it then follows, and, for a step named with (step ...), how to
// name it in a message. ok is false for a chain of another form.
func (r *run) fieldChain(node string, dotIsTop bool) (root any, path []string, where string, ok bool) {
	switch {
	case strings.HasPrefix(node, ".") && dotIsTop:
		return r.data, strings.Split(node[1:], "."), "", true
	case strings.HasPrefix(node, "$."):
		return r.data, strings.Split(node[2:], "."), "", true
	}
	m := stepChainRE.FindStringSubmatch(node)
	if m == nil {
		return nil, nil, "", false
	}
	name, _ := strconv.Unquote(m[1])
	return r.data[name], strings.Split(m[2][1:], "."), fmt.Sprintf("(step %q)", name), true
}

// missing explains a missing key found at node (the template text of the
// field chain, ".tests.outptu"): which object lacked it and what it has.
func (r *run) missing(node, key string, dotIsTop bool) string {
	root, path, where, ok := r.fieldChain(node, dotIsTop)
	if !ok {
		return fmt.Sprintf("no key %q in <%s>", key, node)
	}
	cur := root
	for i, seg := range path {
		obj, ok := cur.(map[string]any)
		if cur == nil && seg == key {
			return fmt.Sprintf("%s is null, so it has no key %q", pathString(where, path[:i]), key)
		}
		if !ok {
			break
		}
		next, ok := obj[seg]
		if ok {
			cur = next
			continue
		}
		if seg != key {
			break
		}
		if i == 0 && where == "" {
			return r.missingTop(key)
		}
		parent := pathString(where, path[:i])
		msg := fmt.Sprintf("no key %q in %s", key, parent)
		keys := slices.Sorted(maps.Keys(obj))
		switch {
		case suggest.Closest(key, keys) != "":
			msg += fmt.Sprintf(" (did you mean %s?)", suggest.Closest(key, keys))
		case len(keys) == 0 && where == "" && i == 1 && path[0] == "bead":
			msg += " (this run has no bead)"
		case len(keys) == 0:
			msg += " (it is empty)"
		case len(keys) <= 12:
			msg += " (it has " + strings.Join(keys, ", ") + ")"
		}
		return msg
	}
	// Dot was not the top of the scope (inside range or with): the chain
	// cannot be followed from the top.
	return fmt.Sprintf("no key %q in <%s>", key, node)
}

func pathString(where string, path []string) string {
	if where == "" && len(path) == 0 {
		return "."
	}
	if len(path) == 0 {
		return where
	}
	return where + "." + strings.Join(path, ".")
}

// missingTop explains a top-level name that is not in the scope.
func (r *run) missingTop(key string) string {
	s := r.scope
	switch {
	case key == "previous" && s != nil && len(s.Loops) > 0:
		f := s.Loops[len(s.Loops)-1]
		return fmt.Sprintf(".previous is undefined on the first step of loop %q (no step of it has run yet); use .loop_entry for the step before the loop", f.Name)
	case key == "previous":
		return ".previous is undefined: no step has run before this one"
	case key == "loop_entry":
		return ".loop_entry is defined only inside a loop"
	}
	msg := fmt.Sprintf("no step or variable %q", key)
	if sug := suggest.Closest(key, slices.Sorted(maps.Keys(r.data))); sug != "" {
		return msg + fmt.Sprintf(" (did you mean %s?)", sug)
	}
	return msg + fmt.Sprintf(" (a step is there once it has finished; a variable is set with --set %s=...)", key)
}

// beadFields are the fields of a bead that are always there: bd omits an
// empty one from its JSON, and a template reading {{.bead.design}} of a
// bead without a design gets an empty value, not an error. body and type
// are coven's names of description and issue_type.
var beadFields = map[string]func() any{
	"id": emptyString, "title": emptyString, "description": emptyString,
	"design": emptyString, "acceptance_criteria": emptyString, "notes": emptyString,
	"status": emptyString, "priority": func() any { return nil }, "issue_type": emptyString,
	"assignee": emptyString, "labels": emptyList, "dependencies": emptyList,
}

func emptyString() any { return "" }
func emptyList() any   { return []any{} }

// beadView is the bead as templates see it: its fields, every field of
// beadFields (empty when the bead lacks it), and coven's body and type. A
// run without a bead sees an empty object.
func beadView(bead map[string]any) map[string]any {
	if len(bead) == 0 {
		return map[string]any{}
	}
	v := maps.Clone(bead)
	for k, empty := range beadFields {
		if _, ok := v[k]; !ok {
			v[k] = empty()
		}
	}
	if _, ok := bead["body"]; !ok {
		v["body"] = v["description"]
	}
	if _, ok := bead["type"]; !ok {
		v["type"] = v["issue_type"]
	}
	return v
}

// copyValue copies the maps and lists of a JSON-like value.
func copyValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		if v == nil {
			return v
		}
		m := make(map[string]any, len(v))
		for k, x := range v {
			m[k] = copyValue(x)
		}
		return m
	case []any:
		if v == nil {
			return v
		}
		l := make([]any, len(v))
		for i, x := range v {
			l[i] = copyValue(x)
		}
		return l
	}
	return v
}
