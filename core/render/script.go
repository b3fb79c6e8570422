package render

import (
	"fmt"
	"strings"
	"text/template/parse"
)

// Command renders the `command` of a script step. Every value is
// shell-quoted as exactly one word, so a value may hold quotes, $(...), ;
// and newlines and still be one argument:
//
//	command: bd close {{.bead.id}}      →  bd close 'foo; rm -rf /'
//
// {{raw .x}} inserts a value unescaped. The warnings are those of
// CommandWarnings, for the caller to emit as events.
func (s *Scope) Command(step, text string) (cmd string, warnings []string, err error) {
	if !strings.Contains(text, "{{") {
		return text, nil, nil
	}
	warnings, err = CommandWarnings(step, text)
	if err != nil {
		return "", warnings, err
	}
	r := &run{mode: modeCommand, data: s.data(), scope: s}
	out, err := r.renderLimited("command", text)
	if err != nil {
		return "", warnings, placeError(step, "command", text, err)
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
// rendering it (for validate and preview) and lists what is risky:
//   - a value inside quotes ('{{.x}}' or "{{.x}}"): the value is quoted
//     already, so the outer quotes become part of the text, or, inside single
//     quotes, take the quoting away;
//   - {{raw ...}}, which inserts a value unescaped.
//
// The error is a template that does not parse.
func CommandWarnings(step, text string) ([]string, error) {
	if !strings.Contains(text, "{{") {
		return nil, nil
	}
	r := &run{mode: modeCommand, data: map[string]any{}}
	t, err := r.parse("command", text)
	if err != nil {
		return nil, placeError(step, "command", text, err)
	}
	w := &quoteWalker{tree: t.Tree}
	w.walk(t.Tree.Root)
	for i, msg := range w.warnings {
		w.warnings[i] = placeError(step, "command", text, fmt.Errorf("%s", msg)).Error()
	}
	return w.warnings, nil
}

// quoteWalker follows the quoting of the shell text around the actions of a
// command template, in the order they appear. Branches of if and range are
// followed one after the other; that is a guess, good enough for a warning.
type quoteWalker struct {
	tree     *parse.Tree
	quote    byte // 0, '\'' or '"'
	escaped  bool
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
		w.text(n.Text)
	case *parse.ActionNode:
		w.raw(n.Pipe)
		if len(n.Pipe.Decl) > 0 {
			return
		}
		src := w.source(n)
		switch w.quote {
		case '"':
			w.warn(n, "%s is inside \"...\": the value is quoted already, so these quotes become part of it; remove them", src)
		case '\'':
			w.warn(n, "%s is inside '...': these quotes undo the quoting of the value, which can then run as shell code; remove them", src)
		}
	case *parse.IfNode:
		w.branch(&n.BranchNode)
	case *parse.RangeNode:
		w.branch(&n.BranchNode)
	case *parse.WithNode:
		w.branch(&n.BranchNode)
	}
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

// text follows POSIX quoting through literal shell text.
func (w *quoteWalker) text(b []byte) {
	for _, c := range b {
		switch {
		case w.escaped:
			w.escaped = false
		case w.quote == '\'':
			if c == '\'' {
				w.quote = 0
			}
		case c == '\\':
			w.escaped = true
		case w.quote == '"':
			if c == '"' {
				w.quote = 0
			}
		case c == '\'' || c == '"':
			w.quote = c
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

// source is the action as the author wrote it, without our hook.
func (w *quoteWalker) source(n *parse.ActionNode) string {
	c := n.Copy().(*parse.ActionNode)
	if k := len(c.Pipe.Cmds); k > 0 {
		if id, ok := c.Pipe.Cmds[k-1].Args[0].(*parse.IdentifierNode); ok && id.Ident == valueFunc {
			c.Pipe.Cmds = c.Pipe.Cmds[:k-1]
		}
	}
	return c.String()
}
