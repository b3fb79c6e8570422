package render

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/template/parse"

	"github.com/vibeteam/vibeteam/internal/excerpt"
	"github.com/vibeteam/vibeteam/internal/suggest"

	"github.com/vibeteam/vibeteam/builtin"
	"github.com/vibeteam/vibeteam/internal/source"
)

// maxIncludeDepth bounds how deep partials nest: deep enough for a spell, a
// section and its pieces, and a cycle the static check missed (a name built
// at run time) still ends quickly.
const maxIncludeDepth = 5

// Spell is the text of an agent prompt before rendering.
type Spell struct {
	// Name is the file name ("implement.md") or "inline spell".
	Name string
	// Source says where the text came from: a path relative to the base
	// directory, "builtin:implement.md", or "inline".
	Source string
	Text   string
}

func (s Spell) label() string {
	if s.Source == "inline" {
		return "inline spell"
	}
	return fmt.Sprintf("spell %q (%s)", strings.TrimSuffix(s.Name, ".md"), s.Source)
}

// Spells finds spells, partials and the system prompt: in
// .vibeteam/spells/, then .coven/spells/ (the format vibeteam's grimoires
// come from), then the built-ins.
type Spells struct {
	base    string
	dirs    []string // relative to base, searched in order
	builtin fs.FS
	// systemPrompts are the files that replace the built-in system prompt,
	// relative to base, in order.
	systemPrompts []string
	builtinSystem string
}

// NewSpells returns the spell lookup of the project at baseDir.
func NewSpells(baseDir string) *Spells {
	return &Spells{
		base:          baseDir,
		dirs:          []string{filepath.Join(".vibeteam", "spells"), filepath.Join(".coven", "spells")},
		builtin:       builtin.Spells(),
		systemPrompts: []string{filepath.Join(".vibeteam", "system-prompt.md"), filepath.Join(".coven", "system-prompt.md")},
		builtinSystem: builtin.SystemPrompt(),
	}
}

// Load returns the spell a step names. A reference with a newline is an
// inline spell and no file is looked up; otherwise it is a name, found as
// NAME.md (".md" may be given).
func (sp *Spells) Load(ref string) (Spell, error) {
	if strings.Contains(ref, "\n") {
		return Spell{Name: "inline spell", Source: "inline", Text: ref}, nil
	}
	name := strings.TrimSpace(ref)
	if err := checkName(name); err != nil {
		return Spell{}, fmt.Errorf("spell %q: %v", ref, err)
	}
	return sp.find(fileName(name), "spell")
}

// fileName adds the .md a spell name may leave out.
func fileName(name string) string {
	if path.Ext(name) == "" {
		return name + ".md"
	}
	return name
}

// checkName keeps a spell name inside the spell folders.
func checkName(name string) error {
	switch {
	case name == "":
		return errors.New("the name is empty")
	case strings.ContainsAny(name, "\\\x00"), path.IsAbs(name), filepath.IsAbs(name):
		return errors.New("a spell name is a file name in a spells folder, not a path")
	}
	for _, seg := range strings.Split(name, "/") {
		if seg == ".." || seg == "." || seg == "" {
			return errors.New("a spell name is a file name in a spells folder, not a path")
		}
	}
	return nil
}

// find looks file up in the folders, then the built-ins. what is "spell" or
// "partial", for the error.
func (sp *Spells) find(file, what string) (Spell, error) {
	for _, dir := range sp.dirs {
		rel := filepath.Join(dir, filepath.FromSlash(file))
		p := filepath.Join(sp.base, rel)
		if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if !inside(filepath.Join(sp.base, dir), p) {
			return Spell{}, fmt.Errorf("%s %q: %s leads out of %s (a symbolic link): a spell resolves inside the spell folders or not at all", what, strings.TrimSuffix(file, ".md"), rel, dir)
		}
		data, err := source.Read(p)
		if err != nil {
			var se *source.Error
			if errors.As(err, &se) {
				return Spell{}, fmt.Errorf("%s %q: %s: %s", what, strings.TrimSuffix(file, ".md"), rel, se.Msg)
			}
			return Spell{}, fmt.Errorf("%s %q: %v", what, strings.TrimSuffix(file, ".md"), err)
		}
		return Spell{Name: file, Source: rel, Text: string(data)}, nil
	}
	if data, err := fs.ReadFile(sp.builtin, file); err == nil {
		return Spell{Name: file, Source: "builtin:" + file, Text: string(data)}, nil
	}
	var where []string
	for _, dir := range sp.dirs {
		where = append(where, filepath.Join(dir, file))
	}
	msg := fmt.Sprintf("%s %q not found (looked for %s, and among the built-in spells)",
		what, strings.TrimSuffix(file, ".md"), strings.Join(where, ", "))
	if s := suggest.Closest(file, sp.names()); s != "" {
		msg += fmt.Sprintf("; did you mean %q?", strings.TrimSuffix(s, ".md"))
	}
	return Spell{}, errors.New(msg)
}

// inside reports whether path, its symbolic links followed, is inside
// dir (itself followed: a spell folder may be a link).
func inside(dir, path string) bool {
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return false
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return false
	}
	rel, err := filepath.Rel(realDir, real)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// names lists the spell files that exist, for "did you mean".
func (sp *Spells) names() []string {
	var names []string
	for _, dir := range sp.dirs {
		entries, _ := os.ReadDir(filepath.Join(sp.base, dir))
		for _, e := range entries {
			names = append(names, e.Name())
		}
	}
	entries, _ := fs.ReadDir(sp.builtin, ".")
	for _, e := range entries {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// spellContentRE finds the place of the spell in a system prompt.
var spellContentRE = regexp.MustCompile(`\{\{-?\s*\.spell_content\s*-?\}\}`)

// SystemPrompt returns the system prompt that wraps every agent prompt:
// .vibeteam/system-prompt.md, else .coven/system-prompt.md, else the
// built-in one. A project's must contain {{.spell_content}}, or the spell
// would silently never reach the agent.
func (sp *Spells) SystemPrompt() (Spell, error) {
	for _, rel := range sp.systemPrompts {
		p := filepath.Join(sp.base, rel)
		if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		data, err := source.Read(p)
		if err != nil {
			return Spell{}, fmt.Errorf("system prompt: %v", err)
		}
		if !spellContentRE.Match(data) {
			return Spell{}, fmt.Errorf("system prompt %s: must contain {{.spell_content}}, where the spell of each agent step goes", rel)
		}
		return Spell{Name: "system-prompt.md", Source: rel, Text: string(data)}, nil
	}
	return Spell{Name: "system-prompt.md", Source: "builtin:system-prompt.md", Text: sp.builtinSystem}, nil
}

// AgentPrompt renders the prompt of an agent step: its spell (a name or an
// inline text) with the scope and the step's rendered inputs ({{.KEY}}),
// then the system prompt with the result as {{.spell_content}}.
func (s *Scope) AgentPrompt(step string, spells *Spells, spell string, inputs map[string]string) (string, error) {
	p, err := s.AgentPromptParts(step, spells, spell, inputs)
	return p.Prompt, err
}

// PromptParts are the parts of an agent step's prompt.
type PromptParts struct {
	Spell   Spell  // the spell as found: its name and where it came from
	Content string // the spell rendered
	System  Spell  // the system prompt that wraps the spell
	Prompt  string // the whole prompt, system prompt included
}

// AgentPromptParts is AgentPrompt, with the parts of the prompt; what it
// found is set even when it fails.
func (s *Scope) AgentPromptParts(step string, spells *Spells, spell string, inputs map[string]string) (PromptParts, error) {
	var pp PromptParts
	sp, err := spells.Load(spell)
	if err != nil {
		return pp, fmt.Errorf("step %q: %v", step, err)
	}
	pp.Spell = sp
	data := s.data(step)
	keys := slices.Sorted(maps.Keys(inputs))
	for _, k := range keys {
		if IsReserved(k) {
			return pp, fmt.Errorf("step %q: input %q: the name is reserved (%s)", step, k, strings.Join(ReservedNames, ", "))
		}
		data[k] = inputs[k]
	}
	r := s.newRun(modeText, data, keys...)
	r.spells, r.chain = spells, []string{chainName(sp)}
	content, err := r.renderLimited("spell", sp.Text)
	if err != nil {
		return pp, joinPrefixed(fmt.Sprintf("step %q: %s: ", step, sp.label()), err)
	}
	s.warnf(step, sp.label(), *r.warnings)
	pp.Content = content
	sys, err := spells.SystemPrompt()
	if err != nil {
		return pp, fmt.Errorf("step %q: %v", step, err)
	}
	pp.System = sys
	sysData := maps.Clone(data)
	// The system prompt places the spell between its own paragraphs; the
	// blank lines around it are the system prompt's to choose.
	sysData["spell_content"] = strings.TrimSpace(content)
	r = s.newRun(modeText, sysData, append(keys, "spell_content")...)
	r.spells, r.chain = spells, []string{sys.Name}
	out, err := r.renderLimited("system", sys.Text)
	if err != nil {
		return pp, joinPrefixed(fmt.Sprintf("step %q: system prompt (%s): ", step, sys.Source), err)
	}
	s.warnf(step, "system prompt ("+sys.Source+")", *r.warnings)
	pp.Prompt = out
	return pp, nil
}

func chainName(sp Spell) string {
	if sp.Source == "inline" {
		return "inline spell"
	}
	return sp.Name
}

// includeError is an error inside a partial; each include on the way out
// names its partial and line.
type includeError struct{ msg string }

func (e *includeError) Error() string { return e.msg }

// chainError is a cycle or a nesting too deep: the chain of names says
// where, so it goes up unchanged.
type chainError struct{ msg string }

func (e *chainError) Error() string { return e.msg }

func cycleError(chain []string, file string) error {
	return &chainError{"include cycle: " + strings.Join(append(slices.Clone(chain), file), " -> ")}
}

func depthError(chain []string, file string) error {
	return &chainError{fmt.Sprintf("includes nest deeper than %d: %s", maxIncludeDepth,
		strings.Join(append(slices.Clone(chain), file), " -> "))}
}

// include is {{include "name.md" "key" value ...}}: the partial rendered
// with the scope of its caller plus the given keys.
func (r *run) include(name string, kv ...any) (string, error) {
	if r.stopped() {
		return "", errStopped
	}
	if err := checkName(name); err != nil {
		return "", &funcError{fmt.Sprintf("include %q: %v", name, err)}
	}
	file := fileName(name)
	if slices.Contains(r.chain, file) {
		return "", cycleError(r.chain, file)
	}
	if len(r.chain) > maxIncludeDepth {
		return "", depthError(r.chain, file)
	}
	if len(kv)%2 != 0 {
		return "", &funcError{fmt.Sprintf("include %q: the arguments after the name must be pairs of a key and a value", name)}
	}
	data := maps.Clone(r.data)
	c := r.child(data, file)
	for i := 0; i < len(kv); i += 2 {
		k, ok := kv[i].(string)
		if !ok {
			return "", &funcError{fmt.Sprintf("include %q: argument %d must be a key (a string), not %s", name, i+2, kindOf(kv[i], ""))}
		}
		data[k] = kv[i+1]
		if c.dry != nil {
			c.dry.known[k] = true
		}
	}
	sp, err := r.spells.find(file, "partial")
	if err != nil {
		return "", &funcError{err.Error()}
	}
	out, err := c.render("partial", sp.Text)
	for _, w := range *c.warnings {
		w = fmt.Sprintf("include %q (%s): %s", strings.TrimSuffix(file, ".md"), sp.Source, w)
		if r.warnings != nil && !slices.Contains(*r.warnings, w) {
			*r.warnings = append(*r.warnings, w)
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

// Check verifies a spell without rendering it, for validate and preview: it
// exists, it and its partials parse, the partials named by a literal
// exist, and they neither cycle nor nest too deep.
func (sp *Spells) Check(ref string) error {
	s, err := sp.Load(ref)
	if err != nil {
		return err
	}
	if err := sp.check(s, []string{chainName(s)}); err != nil {
		return fmt.Errorf("%s: %v", s.label(), err)
	}
	sys, err := sp.SystemPrompt()
	if err != nil {
		return err
	}
	if err := sp.check(sys, []string{sys.Name}); err != nil {
		return fmt.Errorf("system prompt (%s): %v", sys.Source, err)
	}
	return nil
}

func (sp *Spells) check(s Spell, chain []string) error {
	r := &run{mode: modeText, data: map[string]any{}, spells: sp}
	t, err := r.parse("spell", s.Text)
	if err != nil {
		return err
	}
	var names []string
	for _, tt := range t.Templates() {
		if tt.Tree != nil {
			eachCommand(tt.Tree.Root, func(c *parse.CommandNode) {
				if id, ok := c.Args[0].(*parse.IdentifierNode); ok && id.Ident == "include" && len(c.Args) > 1 {
					if name, ok := c.Args[1].(*parse.StringNode); ok {
						names = append(names, name.Text)
					}
				}
			})
		}
	}
	for _, name := range names {
		if err := checkName(name); err != nil {
			return fmt.Errorf("include %q: %v", name, err)
		}
		file := fileName(name)
		if slices.Contains(chain, file) {
			return cycleError(chain, file)
		}
		if len(chain) > maxIncludeDepth {
			return depthError(chain, file)
		}
		p, err := sp.find(file, "partial")
		if err != nil {
			return err
		}
		if err := sp.check(p, append(slices.Clone(chain), file)); err != nil {
			var ce *chainError
			if errors.As(err, &ce) {
				return err
			}
			return fmt.Errorf("include %q (%s): %v", strings.TrimSuffix(file, ".md"), p.Source, err)
		}
	}
	return nil
}

// eachCommand calls f on every command of every pipeline under n.
func eachCommand(n parse.Node, f func(*parse.CommandNode)) {
	var pipe func(p *parse.PipeNode)
	pipe = func(p *parse.PipeNode) {
		if p == nil {
			return
		}
		for _, c := range p.Cmds {
			f(c)
			for _, a := range c.Args {
				switch a := a.(type) {
				case *parse.PipeNode:
					pipe(a)
				case *parse.ChainNode:
					if p, ok := a.Node.(*parse.PipeNode); ok {
						pipe(p)
					}
				}
			}
		}
	}
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return
		}
		for _, c := range n.Nodes {
			eachCommand(c, f)
		}
	case *parse.ActionNode:
		pipe(n.Pipe)
	case *parse.IfNode:
		pipe(n.Pipe)
		eachCommand(n.List, f)
		eachCommand(n.ElseList, f)
	case *parse.RangeNode:
		pipe(n.Pipe)
		eachCommand(n.List, f)
		eachCommand(n.ElseList, f)
	case *parse.WithNode:
		pipe(n.Pipe)
		eachCommand(n.List, f)
		eachCommand(n.ElseList, f)
	case *parse.TemplateNode:
		pipe(n.Pipe)
	}
}

// includeStartRE finds where an include action begins ("{{include ",
// "{{- include ").
var includeStartRE = regexp.MustCompile(`\{\{(?:-[ \t\r\n])?[ \t\r\n]*include[ \t\r\n]`)

// rewriteIncludes turns the include form of the spec,
//
//	{{include "name.md" key="value" other={{.bead.title}}}}
//
// into Go's, {{include "name.md" "key" "value" "other" (.bead.title)}}, which
// text/template can parse. An include already in Go's form is left alone.
// Line breaks are kept, so that errors point at the lines the author wrote.
func rewriteIncludes(text string) (string, error) {
	if !strings.Contains(text, "include") {
		return text, nil
	}
	var b strings.Builder
	pos := 0
	for {
		loc := includeStartRE.FindStringIndex(text[pos:])
		if loc == nil {
			break
		}
		start, i := pos+loc[0], pos+loc[1]
		repl, end, err := rewriteInclude(text, start, i)
		if err != nil {
			line := 1 + strings.Count(text[:start], "\n")
			return "", fmt.Errorf("line %d: include: %v", line, err)
		}
		if end < 0 { // not the spec's form
			b.WriteString(text[pos:i])
			pos = i
			continue
		}
		b.WriteString(text[pos:start])
		b.WriteString(repl)
		pos = end
	}
	b.WriteString(text[pos:])
	return b.String(), nil
}

// rewriteInclude reads the include action that starts at start (its
// arguments at i). It returns the Go form and where the action ends, or end
// -1 when the action has no key=value pair.
func rewriteInclude(text string, start, i int) (string, int, error) {
	open := text[start:i]
	open = open[:len(open)-1] // the separator after "include"
	skip := func() {
		for i < len(text) && strings.IndexByte(" \t\r\n", text[i]) >= 0 {
			i++
		}
	}
	// closing is the "}}" or " -}}" that ends the action at i, if any; a
	// trim marker needs the space skip() has passed over.
	closing := func() (string, int) {
		switch {
		case strings.HasPrefix(text[i:], "}}"):
			return "}}", 2
		case strings.HasPrefix(text[i:], "-}}") && strings.IndexByte(" \t\r\n", text[i-1]) >= 0:
			return " -}}", 3
		}
		return "", 0
	}
	skip()
	name, err := operand(text, &i)
	if err != nil {
		return "", -1, nil // text/template will say what is wrong
	}
	var args []string
	for {
		skip()
		if i >= len(text) {
			if len(args) == 0 {
				return "", -1, nil
			}
			return "", 0, errors.New("the action is not closed with }}")
		}
		if c, n := closing(); n > 0 {
			if len(args) == 0 {
				return "", -1, nil
			}
			repl := open + " " + name + " " + strings.Join(args, " ")
			// Keep the line count of the original.
			if k := strings.Count(text[start:i], "\n") - strings.Count(repl, "\n"); k > 0 {
				repl += strings.Repeat("\n", k)
			}
			return repl + c, i + n, nil
		}
		key := identRE.FindString(text[i:])
		if key == "" || !strings.HasPrefix(text[i+len(key):], "=") {
			if len(args) == 0 {
				return "", -1, nil // Go's form: {{include "x.md" "key" .value}}
			}
			return "", 0, fmt.Errorf("expected key=value, found %q", clip(text[i:]))
		}
		i += len(key) + 1
		value, err := operand(text, &i)
		if err != nil {
			return "", 0, fmt.Errorf("%s=: %v", key, err)
		}
		args = append(args, strconv.Quote(key), value)
	}
}

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*`)

// operand reads one value of an include at *i: a quoted string, a
// {{pipeline}} (which becomes "(pipeline)"), or a bare operand such as .x.
func operand(text string, i *int) (string, error) {
	rest := text[*i:]
	switch {
	case rest == "":
		return "", errors.New("a value is missing")
	case rest[0] == '"' || rest[0] == '`':
		q, err := strconv.QuotedPrefix(rest)
		if err != nil {
			return "", fmt.Errorf("unterminated string %q", clip(rest))
		}
		*i += len(q)
		return q, nil
	case strings.HasPrefix(rest, "{{"):
		j, err := pipelineEnd(rest, 2)
		if err != nil {
			return "", err
		}
		inner := rest[2:j]
		if len(inner) > 1 && inner[0] == '-' && strings.IndexByte(" \t\r\n", inner[1]) >= 0 {
			inner = inner[1:]
		}
		if n := len(inner); n > 1 && inner[n-1] == '-' && strings.IndexByte(" \t\r\n", inner[n-2]) >= 0 {
			inner = inner[:n-1]
		}
		if strings.TrimSpace(inner) == "" {
			return "", errors.New("an empty {{}}")
		}
		*i += j + 2
		return "(" + inner + ")", nil
	}
	j := 0
	for j < len(rest) && strings.IndexByte(" \t\r\n", rest[j]) < 0 && !strings.HasPrefix(rest[j:], "}}") {
		j++
	}
	if j == 0 {
		return "", fmt.Errorf("a value is missing before %q", clip(rest))
	}
	*i += j
	return "(" + rest[:j] + ")", nil
}

// pipelineEnd finds the "}}" that closes the action whose text begins at
// s[from:], outside quoted strings and character constants.
func pipelineEnd(s string, from int) (int, error) {
	for j := from; j < len(s); j++ {
		switch c := s[j]; c {
		case '"', '`', '\'':
			k := j + 1
			for k < len(s) && s[k] != c {
				if s[k] == '\\' && c != '`' {
					k++
				}
				k++
			}
			if k >= len(s) {
				return 0, fmt.Errorf("unterminated quote in %q", clip(s))
			}
			j = k
		case '}':
			if strings.HasPrefix(s[j:], "}}") {
				return j, nil
			}
		}
	}
	return 0, fmt.Errorf("%q is not closed with }}", clip(s))
}

// clip shortens text quoted in an error.
func clip(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return excerpt.Runes(s, 40, "...")
}
