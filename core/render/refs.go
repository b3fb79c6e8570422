package render

import (
	"slices"
	"text/template/parse"
)

// References lists the top-level names a template reads from the scope
// (.tests in {{.tests.output}}, run-tests in {{step "run-tests"}}), sorted,
// for validate and preview to check against the steps that come before and
// the variables given. Names read relative to a dot that range or with has
// moved, names built at run time, and names read by included partials are
// not listed.
func References(text string) ([]string, error) {
	r := &run{mode: modeText, data: map[string]any{}, spells: &Spells{}}
	t, err := r.parse("template", text)
	if err != nil {
		return nil, err
	}
	var names []string
	add := func(name string) {
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	// top: dot is the top of the scope; main: so is $ (not in a defined
	// template, whose $ is what it is given).
	var walk func(n parse.Node, top, main bool)
	walk = func(n parse.Node, top, main bool) {
		switch n := n.(type) {
		case *parse.ListNode:
			if n == nil {
				return
			}
			for _, c := range n.Nodes {
				walk(c, top, main)
			}
		case *parse.ActionNode:
			walk(n.Pipe, top, main)
		case *parse.PipeNode:
			if n == nil {
				return
			}
			for _, c := range n.Cmds {
				if id, ok := c.Args[0].(*parse.IdentifierNode); ok && id.Ident == "step" && len(c.Args) > 1 {
					if s, ok := c.Args[1].(*parse.StringNode); ok {
						add(s.Text)
					}
				}
				for _, a := range c.Args {
					walk(a, top, main)
				}
			}
		case *parse.FieldNode:
			if top {
				add(n.Ident[0])
			}
		case *parse.VariableNode:
			if main && n.Ident[0] == "$" && len(n.Ident) > 1 {
				add(n.Ident[1])
			}
		case *parse.ChainNode:
			walk(n.Node, top, main)
		case *parse.IfNode:
			walk(n.Pipe, top, main)
			walk(n.List, top, main)
			walk(n.ElseList, top, main)
		case *parse.RangeNode:
			walk(n.Pipe, top, main)
			walk(n.List, false, main)
			walk(n.ElseList, top, main)
		case *parse.WithNode:
			walk(n.Pipe, top, main)
			walk(n.List, false, main)
			walk(n.ElseList, top, main)
		case *parse.TemplateNode:
			walk(n.Pipe, top, main)
		}
	}
	for _, tt := range t.Templates() {
		if tt.Tree != nil {
			main := tt.Name() == t.Name()
			walk(tt.Tree.Root, main, main)
		}
	}
	slices.Sort(names)
	return names, nil
}
