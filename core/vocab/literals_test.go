package vocab

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// outsideWords are the packages that speak another program's words: the
// ACP wire protocol, the agent CLIs' streams and bd's statuses spell some
// of theirs as vibeteam spells its own ("completed", "failed",
// "blocked"), and are not vibeteam's vocabulary.
var outsideWords = []string{"core/acp", "core/agentstream", "core/beads"}

// statusish names a thing that holds a status, a reason, a state or a
// step type: a literal compared with, switched on, assigned to or
// converted to one of those is a word of the vocabulary typed out again.
var statusish = regexp.MustCompile(`(?i)(status|reason|state|type|overall)$`)

// TestNoStatusLiterals holds cli/, ui/ and core/ to the vocabulary: outside
// this package, a known status, reason, state or step type is never a
// string literal where a status is compared, switched on, assigned or
// converted. Name the constant instead.
func TestNoStatusLiterals(t *testing.T) {
	known := map[string]bool{}
	for _, words := range [][]string{Strings(SessionStatuses), Strings(TaskStatuses), Strings(StepStatuses),
		Strings(StepTypes), Strings(Reasons), Strings(SessionStates)} {
		for _, w := range words {
			known[w] = true
		}
	}
	var found []string
	for _, root := range []string{"../../cli", "../../ui", "../../core"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel := strings.TrimPrefix(filepath.ToSlash(path), "../../")
			if d.IsDir() {
				if d.Name() == "testdata" || rel == "core/vocab" || isOutside(rel) {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			found = append(found, statusLiterals(t, path, rel, known)...)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range found {
		t.Errorf("a status word typed out as a literal (use its vocab constant): %s", f)
	}
}

func isOutside(rel string) bool {
	for _, p := range outsideWords {
		if rel == p {
			return true
		}
	}
	return false
}

// statusLiterals are the literals of one file that are known words in a
// status position.
func statusLiterals(t *testing.T, path, rel string, known map[string]bool) []string {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	// A reason's word at the head of prose ("merge_refused: git refused
	// …") is Reason.Because, wherever it stands.
	ast.Inspect(f, func(n ast.Node) bool {
		if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			v, _ := strconv.Unquote(lit.Value)
			if word, _, ok := strings.Cut(v, ": "); ok && strings.Contains(word, "_") && known[word] {
				out = append(out, rel+":"+strconv.Itoa(fset.Position(lit.Pos()).Line)+": "+lit.Value)
			}
		}
		return true
	})
	flag := func(e ast.Expr) {
		lit, ok := e.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return
		}
		if v, err := strconv.Unquote(lit.Value); err == nil && known[v] {
			p := fset.Position(lit.Pos())
			out = append(out, rel+":"+strconv.Itoa(p.Line)+": "+lit.Value)
		}
	}
	// A switch's tag, for its case clauses.
	var tags []ast.Expr
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SwitchStmt:
			tags = append(tags, n.Tag)
			for _, c := range n.Body.List {
				if statusName(n.Tag) {
					for _, e := range c.(*ast.CaseClause).List {
						flag(e)
					}
				}
			}
		case *ast.BinaryExpr:
			if n.Op == token.EQL || n.Op == token.NEQ {
				if statusName(n.X) {
					flag(n.Y)
				}
				if statusName(n.Y) {
					flag(n.X)
				}
			}
		case *ast.AssignStmt:
			for i, l := range n.Lhs {
				if i < len(n.Rhs) && statusName(l) {
					flag(n.Rhs[i])
				}
			}
		case *ast.KeyValueExpr:
			if statusName(n.Key) {
				flag(n.Value)
			}
		case *ast.ValueSpec:
			if n.Type != nil && statusName(n.Type) {
				for _, v := range n.Values {
					flag(v)
				}
			}
		case *ast.CallExpr:
			if len(n.Args) == 1 && statusName(n.Fun) {
				flag(n.Args[0])
			}
		}
		return true
	})
	return out
}

// statusName reports whether e names a status-holding thing: x.Status,
// reason, state.TaskStatus, BlockedReason.
func statusName(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.Ident:
		return statusish.MatchString(e.Name)
	case *ast.SelectorExpr:
		return statusish.MatchString(e.Sel.Name)
	case *ast.ParenExpr:
		return statusName(e.X)
	case *ast.CallExpr:
		// string(x.Status)
		if id, ok := e.Fun.(*ast.Ident); ok && id.Name == "string" && len(e.Args) == 1 {
			return statusName(e.Args[0])
		}
	}
	return false
}
