package workflow

import (
	"fmt"
	"strconv"
	"strings"
	"text/template"
	"unicode"
)

// Validate runs the semantic checks (stages and tasks present, ids unique,
// adapters registered, execution modes, prompts of headless tasks) on a
// definition that is already built, for example one reloaded from a session
// file when the adapters or --headless may have changed since it was stored.
// Positions come from the definition and may be zero. Validate does not
// modify def; see Normalize.
func Validate(def *Definition, opts LoadOptions) ErrorList {
	if def == nil {
		return ErrorList{{Msg: "no workflow definition"}}
	}
	errs := check(def, opts, nil, nil, Pos{File: def.Source})
	errs.sortByPos()
	return errs
}

// Normalize gives every task an explicit execution mode (interactive when
// none was written) and applies --headless, so that the engine and the stored
// session never have to know the defaults.
func Normalize(def *Definition, opts LoadOptions) {
	if def == nil {
		return
	}
	for i := range def.Steps {
		for j := range def.Steps[i].Tasks {
			t := &def.Steps[i].Tasks[j]
			if t.ExecutionMode == "" {
				t.ExecutionMode = ModeInteractive
			}
			if opts.ForceHeadless {
				t.ExecutionMode = ModeHeadless
			}
		}
	}
}

// checker holds the semantic checks shared by Parse and Validate, so both
// report a problem with the same words.
type checker struct {
	opts LoadOptions
	// pos maps a field path to the position of its value in the file. It is
	// nil for Validate; then the positions of steps and tasks are used.
	pos map[string]Pos
	// broken holds the fields Parse already reported a structural error for
	// (a list where a string belongs, say): the semantic check of such a field
	// would only repeat the same problem in vaguer words.
	broken map[string]bool
	errs   ErrorList
}

// firstDef remembers where an id was first seen, to point at it from the
// duplicate.
type firstDef struct {
	field string
	pos   Pos
}

func check(def *Definition, opts LoadOptions, pos map[string]Pos, broken map[string]bool, root Pos) ErrorList {
	c := &checker{opts: opts, pos: pos, broken: broken}
	switch def.Kind {
	case "", KindStages:
	case KindGrimoire:
		c.add(root, "", "grimoire files are not supported yet")
		return c.errs
	default:
		c.add(root, "kind", fmt.Sprintf("unknown kind %q", def.Kind))
		return c.errs
	}

	c.id("", "workflow", def.ID, root)
	if len(def.Steps) == 0 && !c.broken["stages"] {
		if c.notWritten("stages") {
			c.missing("", "stages", root)
		} else {
			c.add(c.at("stages", root), "stages", "a workflow needs at least one stage")
		}
	}

	stageIDs := map[string]firstDef{}
	taskIDs := map[string]firstDef{}
	for i, s := range def.Steps {
		sf := "stages[" + strconv.Itoa(i) + "]"
		spos := c.at(sf, orRoot(s.Pos, root))
		if s.Type != StepStage {
			c.add(spos, sf, fmt.Sprintf("step type %q is not supported yet", s.Type))
			continue
		}
		if c.id(sf, "stage", s.ID, spos) {
			c.unique(stageIDs, "stage", s.ID, sf+".id", spos)
		}
		switch {
		case len(s.Tasks) > 0 || c.broken[sf+".tasks"]:
		case c.notWritten(sf + ".tasks"):
			c.missing(sf, "tasks", spos)
		default:
			msg := "a stage needs at least one task"
			if s.ID != "" {
				msg = fmt.Sprintf("stage %q needs at least one task", s.ID)
			}
			c.add(c.at(sf+".tasks", spos), sf+".tasks", msg)
		}
		for j, t := range s.Tasks {
			c.task(sf+".tasks["+strconv.Itoa(j)+"]", t, orRoot(t.Pos, spos), taskIDs)
		}
	}
	return c.errs
}

func (c *checker) task(tf string, t Task, tpos Pos, ids map[string]firstDef) {
	if c.id(tf, "task", t.ID, tpos) {
		c.unique(ids, "task", t.ID, tf+".id", tpos)
	}

	af := tf + ".adapter"
	switch {
	case c.broken[af]:
	case strings.TrimSpace(t.Adapter) == "":
		c.missing(tf, "adapter", tpos)
	case c.opts.Adapters != nil && !c.opts.Adapters.Has(t.Adapter):
		known := "no adapters are registered"
		if names := c.opts.Adapters.Names(); len(names) > 0 {
			known = "known: " + strings.Join(names, ", ")
		}
		c.add(c.at(af, tpos), af, fmt.Sprintf("unknown adapter %q (%s)", t.Adapter, known))
	}

	mf := tf + ".executionMode"
	switch t.ExecutionMode {
	case "", ModeInteractive, ModeHeadless:
	default:
		if !c.broken[mf] {
			c.add(c.at(mf, tpos), mf, fmt.Sprintf("must be %q or %q, got %q", ModeInteractive, ModeHeadless, t.ExecutionMode))
		}
	}

	effective := t.ExecutionMode
	if effective == "" {
		effective = ModeInteractive
	}
	if c.opts.ForceHeadless {
		effective = ModeHeadless
	}
	if ms, ok := c.opts.Adapters.(ModeSet); ok && !c.broken[af] && c.opts.Adapters.Has(t.Adapter) && !ms.HasMode(t.Adapter, effective) {
		msg := fmt.Sprintf("adapter %q has no %s mode", t.Adapter, effective)
		if c.opts.ForceHeadless && t.ExecutionMode != ModeHeadless {
			msg += " (--headless runs every task headless)"
		}
		c.add(c.at(mf, tpos), af, msg)
	} else if ok && len(t.PendingInputs) > 0 && c.opts.Adapters.Has(t.Adapter) && !ms.TakesQueue(t.Adapter, effective) {
		qf := tf + ".pendingInputs"
		c.add(c.at(qf, tpos), qf, fmt.Sprintf("adapter %q has no interaction_idle state in %s mode, so these would never be sent", t.Adapter, effective))
	}

	pf := tf + ".prompt"
	headless := t.ExecutionMode == ModeHeadless || c.opts.ForceHeadless
	if headless && strings.TrimSpace(t.Prompt) == "" && !c.broken[pf] {
		msg := "a headless task needs a prompt"
		if c.opts.ForceHeadless && t.ExecutionMode != ModeHeadless {
			msg = fmt.Sprintf("task %q has no prompt; --headless runs every task headless, and a headless task needs a prompt", t.ID)
		}
		c.add(c.at(pf, tpos), pf, msg)
	}

	if !c.broken[pf] && strings.Contains(t.Prompt, "{{") {
		// Syntax only: variables are known at run time.
		if _, err := template.New("prompt").Parse(t.Prompt); err != nil {
			// "template: prompt:1: unclosed action" → "template line 1: unclosed action"
			msg := strings.TrimPrefix(err.Error(), "template: prompt:")
			c.add(c.at(pf, tpos), pf, "template line "+msg)
		}
	}

	for _, d := range []struct {
		key string
		v   Duration
	}{{"timeout", t.Timeout}, {"inactivityTimeout", t.InactivityTimeout}} {
		if d.v < 0 && !c.broken[tf+"."+d.key] {
			c.add(c.at(tf+"."+d.key, tpos), tf+"."+d.key, "must be a positive duration")
		}
	}
}

// id checks an id that must be present and usable as a file name (task ids
// name log files and the checkpoint refers to them). It reports whether the id
// is worth checking for uniqueness.
func (c *checker) id(parent, what, id string, parentPos Pos) bool {
	f := "id"
	if parent != "" {
		f = parent + ".id"
	}
	if c.broken[f] {
		return false
	}
	if id == "" {
		c.missing(parent, "id", parentPos)
		return false
	}
	if p := idProblem(id); p != "" {
		c.add(c.at(f, parentPos), f, fmt.Sprintf("invalid %s id %q: %s", what, id, p))
		return false
	}
	return true
}

func (c *checker) unique(seen map[string]firstDef, what, id, field string, fallback Pos) {
	p := c.at(field, fallback)
	first, dup := seen[id]
	if !dup {
		seen[id] = firstDef{field: field, pos: p}
		return
	}
	where := first.field
	if first.pos.Line > 0 {
		where = "line " + strconv.Itoa(first.pos.Line)
	}
	c.add(p, field, fmt.Sprintf("duplicate %s id %q (first defined at %s)", what, id, where))
}

// missing reports a required value that is empty: at the value when the file
// wrote one (id: ""), else at the mapping that lacks the key.
func (c *checker) missing(parent, key string, p Pos) {
	f := joinField(parent, key)
	if vp, written := c.pos[f]; written {
		c.add(vp, f, "must not be empty")
		return
	}
	c.add(p, parent, fmt.Sprintf("missing required key %q", key))
}

// notWritten is true when a file is being checked and it lacks the key
// behind field: "missing key" says more than "needs at least one" then.
func (c *checker) notWritten(field string) bool {
	if c.pos == nil {
		return false
	}
	_, written := c.pos[field]
	return !written
}

// at is the position of field's value if the file had one, else fallback.
func (c *checker) at(field string, fallback Pos) Pos {
	if p, ok := c.pos[field]; ok {
		return p
	}
	return fallback
}

func (c *checker) add(p Pos, field, msg string) {
	c.errs = append(c.errs, &Error{Pos: p, Field: field, Msg: msg})
}

// orRoot keeps the file name on errors of a stored definition, whose steps
// and tasks have lost their positions.
func orRoot(p, root Pos) Pos {
	if p.Line == 0 && p.File == "" {
		return Pos{File: root.File}
	}
	return p
}

func joinField(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

// idProblem says why id cannot be used, or "". Ids end up in paths
// (logs/<session>/<task>.log), so they must not be able to climb out of
// their directory or carry control characters into a terminal.
func idProblem(id string) string {
	switch {
	case id == "." || id == "..":
		return `must not be "." or ".."`
	case strings.ContainsAny(id, `/\`):
		return `must not contain "/" or "\"`
	case strings.TrimSpace(id) != id:
		return "must not start or end with spaces"
	case strings.IndexFunc(id, unicode.IsControl) >= 0:
		return "must not contain control characters"
	}
	return ""
}
