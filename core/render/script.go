package render

import (
	"fmt"
	"strings"
	"text/template/parse"
)

// Command renders the `command` of a script step. Each value is quoted for
// where it lands in the shell text (see shellplace.go): as a word of its
// own, inside "...", or inside '...'. A value may hold quotes, $(...), ;
// and newlines and still arrive as it is:
//
//	command: bd close {{.bead.id}}       →  bd close 'foo; rm -rf /'
//	command: git commit -m "fix: {{.t}}" →  git commit -m "fix: \$(x) \"y\""
//
// A value where no quoting is safe ($(...), a here-document, a comment, an
// unterminated quote...) is an error. {{raw .x}} inserts a value unescaped.
// The warnings are those of CommandWarnings, for the caller to emit as
// events.
func (s *Scope) Command(step, text string) (cmd string, warnings []string, err error) {
	if !strings.Contains(text, "{{") {
		return text, nil, nil
	}
	warnings, err = CommandWarnings(step, text)
	if err != nil {
		return "", warnings, err
	}
	r := s.newRun(modeCommand, s.data(step))
	r.values = newCommandValues()
	out, err := r.renderLimited("command", text)
	if err == nil {
		out, err = r.values.fill(out, r.actions)
	}
	if err != nil {
		return "", warnings, placeErrors(step, "command", text, err)
	}
	for _, w := range *r.warnings {
		warnings = append(warnings, placeError(step, "command", text, fmt.Errorf("%s", w)).Error())
	}
	return out, warnings, nil
}

// ShellQuote makes s one word for a POSIX shell: inside single quotes every
// byte is literal except the single quote, which becomes: close the quotes,
// an escaped quote, open them again.
func ShellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// CommandWarnings checks the command template of a script step without
// rendering it (for validate and preview, and before a run renders it):
// the error says each value that cannot be quoted where it is (placed
// with the text of every branch of if and range one after the other), and
// a template that does not parse. The warnings are the uses of {{raw}},
// which inserts a value unescaped.
func CommandWarnings(step, text string) ([]string, error) {
	if !strings.Contains(text, "{{") {
		return nil, nil
	}
	r := &run{mode: modeCommand, data: map[string]any{}}
	t, err := r.parse("command", text)
	if err != nil {
		return nil, placeError(step, "command", text, err)
	}
	w := &quoteWalker{tree: t.Tree, values: newCommandValues()}
	w.walk(t.Tree.Root)
	for i, msg := range w.warnings {
		w.warnings[i] = placeError(step, "command", text, fmt.Errorf("%s", msg)).Error()
	}
	if _, err := w.values.fill(w.skeleton.String(), r.actions); err != nil {
		return w.warnings, placeErrors(step, "command", text, err)
	}
	return w.warnings, nil
}

// quoteWalker writes the shell text of a command template with a sentinel
// for each value (see commandValues), for CommandWarnings to place them.
// Branches of if and range are written one after the other; a run places
// the values again in the text it renders.
type quoteWalker struct {
	tree     *parse.Tree
	skeleton strings.Builder
	values   *commandValues
	warnings []string
}

func (w *quoteWalker) walk(n parse.Node) {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return
		}
		for _, c := range n.Nodes {
			w.walk(c)
		}
	case *parse.TextNode:
		w.skeleton.Write(n.Text)
	case *parse.ActionNode:
		w.raw(n.Pipe)
		if len(n.Pipe.Decl) > 0 {
			return
		}
		cmds, hook := unhooked(n.Pipe)
		if hook == nil || len(hook.Args) < 2 || isRaw(cmds) {
			// raw's text is not known: it is placed at run time.
			return
		}
		if id, ok := hook.Args[1].(*parse.NumberNode); ok {
			w.skeleton.WriteString(w.values.add(int(id.Int64), ""))
		}
	case *parse.IfNode:
		w.branch(&n.BranchNode)
	case *parse.RangeNode:
		w.branch(&n.BranchNode)
	case *parse.WithNode:
		w.branch(&n.BranchNode)
	}
}

// isRaw is a pipeline whose value {{raw}} lets through: raw is its last
// command.
func isRaw(cmds []*parse.CommandNode) bool {
	if len(cmds) == 0 {
		return false
	}
	id, ok := cmds[len(cmds)-1].Args[0].(*parse.IdentifierNode)
	return ok && id.Ident == "raw"
}

func (w *quoteWalker) branch(n *parse.BranchNode) {
	w.raw(n.Pipe)
	w.walk(n.List)
	w.walk(n.ElseList)
}

// raw warns of each use of raw in a pipeline.
func (w *quoteWalker) raw(p *parse.PipeNode) {
	if p == nil {
		return
	}
	for _, c := range p.Cmds {
		for _, a := range c.Args {
			switch a := a.(type) {
			case *parse.IdentifierNode:
				if a.Ident == "raw" {
					w.warn(a, "{{raw}} inserts a value unescaped: make sure it cannot hold text from an agent, a bead or a file")
				}
			case *parse.PipeNode:
				w.raw(a)
			case *parse.ChainNode:
				if p, ok := a.Node.(*parse.PipeNode); ok {
					w.raw(p)
				}
			}
		}
	}
}

func (w *quoteWalker) warn(n parse.Node, format string, args ...any) {
	loc, _ := w.tree.ErrorContext(n)
	line := loc
	if i := strings.LastIndexByte(loc, ':'); i >= 0 {
		line = loc[:i]
	}
	if i := strings.LastIndexByte(line, ':'); i >= 0 {
		line = line[i+1:]
	}
	w.warnings = append(w.warnings, "line "+line+": "+fmt.Sprintf(format, args...))
}
