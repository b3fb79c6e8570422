package render

// Where a value lands in a script command, and how it is quoted there.
//
// A command template is rendered with a sentinel word in place of each
// value: a word of letters and digits that means nothing to a shell and
// cannot be split. The rendered text is then parsed as shell
// (mvdan.cc/sh/v3) and each sentinel found where it landed:
//
//   - a word of its own or part of one, unquoted (echo {{.x}},
//     --title={{.x}}): the value is single-quoted, 'it'\''s';
//   - inside "...": \ " $ and ` are escaped with a backslash;
//   - inside '...': each ' of the value closes the quotes, is escaped, and
//     opens them again ('\'').
//
// Anywhere else the shell would read the value as code or change it, and no
// quoting can help: inside $(...) or `...`, a here-document, ${...} or
// right after $, arithmetic, $'...' or $"...", a comment, a function or
// variable name, right after a backslash, or in a command that does not
// parse (an unterminated quote). That is an error naming the value's line,
// never a warning.

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// landing is where a value lands in the shell text.
type landing int

const (
	landWord   landing = iota // unquoted, in a word
	landDouble                // inside "..."
	landSingle                // inside '...'
)

// commandValues are the values of one rendering of a command, each printed
// as a sentinel word.
type commandValues struct {
	prefix  string
	re      *regexp.Regexp
	values  []string
	actions []int // the action that printed each value
	// markers are the texts a preview shows where a branch begins and
	// ends (⟨if .x⟩, ⟨else⟩, ⟨end⟩): they are no shell text, and are
	// left out when the command is parsed.
	markers  []string
	markerRE *regexp.Regexp
}

func newCommandValues() *commandValues {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	// Letters and digits only: the sentinel is one literal to any shell,
	// whatever is around it. The random part keeps a value let through
	// {{raw}} from forging one.
	prefix := "vtV" + hex.EncodeToString(b[:]) + "n"
	return &commandValues{prefix: prefix, re: regexp.MustCompile(prefix + `(\d+)Z`), markerRE: regexp.MustCompile(prefix + `m(\d+)Z`)}
}

// marker records the text of a preview's branch marker and returns what
// stands for it until the command is filled.
func (c *commandValues) marker(text string) string {
	c.markers = append(c.markers, text)
	return c.prefix + "m" + strconv.Itoa(len(c.markers)-1) + "Z"
}

// add records value s of action id and returns its sentinel.
func (c *commandValues) add(id int, s string) string {
	c.values = append(c.values, s)
	c.actions = append(c.actions, id)
	return c.sentinel(len(c.values) - 1)
}

func (c *commandValues) sentinel(i int) string {
	return c.prefix + strconv.Itoa(i) + "Z"
}

// fill parses text (the command with sentinels) and puts each value in
// place of its sentinel, quoted for where it landed. Each value that cannot
// be placed is one error, "line N: ..." with N the line of its action.
func (c *commandValues) fill(text string, actions []action) (string, error) {
	if len(c.values) > 0 {
		// The branches a preview shows one after the other are placed as
		// validate places them: their texts together.
		lands, err := c.place(c.markerRE.ReplaceAllString(text, ""), actions)
		if err != nil {
			return "", err
		}
		text = c.re.ReplaceAllStringFunc(text, func(m string) string {
			i, _ := strconv.Atoi(c.re.FindStringSubmatch(m)[1])
			return quoteFor(lands[i], c.values[i])
		})
	}
	if len(c.markers) > 0 {
		text = c.markerRE.ReplaceAllStringFunc(text, func(m string) string {
			i, _ := strconv.Atoi(c.markerRE.FindStringSubmatch(m)[1])
			return c.markers[i]
		})
	}
	return text, nil
}

// quoteFor quotes s for where it lands.
func quoteFor(l landing, s string) string {
	switch l {
	case landDouble:
		return doubleQuoteEscaper.Replace(s)
	case landSingle:
		return strings.ReplaceAll(s, "'", `'\''`)
	}
	return ShellQuote(s)
}

// doubleQuoteEscaper escapes the four characters that keep a meaning inside
// "...": every other byte, a newline or invalid UTF-8 included, is literal.
var doubleQuoteEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "$", `\$`, "`", "\\`")

// place finds where each sentinel of text landed. The error joins one
// problem per value that cannot be placed safely.
func (c *commandValues) place(text string, actions []action) ([]landing, error) {
	p := syntax.NewParser(syntax.KeepComments(true), syntax.Variant(syntax.LangBash))
	f, err := p.Parse(strings.NewReader(text), "")
	if err != nil {
		return nil, c.parseError(err, actions)
	}
	pl := &placement{c: c, lands: make([]landing, len(c.values)), seen: make([]int, len(c.values)), problems: make([]string, len(c.values))}
	var stack []syntax.Node
	syntax.Walk(f, func(n syntax.Node) bool {
		if n == nil {
			stack = stack[:len(stack)-1]
			return true
		}
		switch n := n.(type) {
		case *syntax.Lit:
			l, problem := landingOf(n, stack)
			pl.mark(n.Value, l, problem, true)
		case *syntax.SglQuoted:
			l, problem := landingOf(n, stack)
			pl.mark(n.Value, l, problem, false)
		case *syntax.Comment:
			pl.mark(n.Text, landWord, "is inside a comment, where a newline in the value would end the comment and run the rest as commands", false)
		}
		stack = append(stack, n)
		return true
	})
	return pl.lands, c.problems(pl, actions)
}

// parseError says that the command is no shell, the value as written
// where the parser's message quotes a sentinel.
func (c *commandValues) parseError(err error, actions []action) error {
	line, msg := 1, err.Error()
	var pe syntax.ParseError
	if errors.As(err, &pe) {
		line, msg = int(pe.Pos.Line()), pe.Text
	}
	msg = c.re.ReplaceAllStringFunc(msg, func(m string) string {
		i, _ := strconv.Atoi(c.re.FindStringSubmatch(m)[1])
		if i < len(c.actions) && c.actions[i] < len(actions) {
			return actions[c.actions[i]].src
		}
		return "the value"
	})
	return fmt.Errorf("line %d: the command does not parse as shell (%s), so vibeteam cannot tell where its values land to quote them", line, msg)
}

// placement is where each value's sentinel landed, how many times, and
// the first problem of its place.
type placement struct {
	c        *commandValues
	lands    []landing
	seen     []int
	problems []string
}

// mark notes the sentinels in value (a literal's or a comment's text) as
// landed at l, with problem ("" none); backslashes: one before a sentinel
// would escape the value's quoting.
func (pl *placement) mark(value string, l landing, problem string, backslashes bool) {
	for _, m := range pl.c.re.FindAllStringSubmatchIndex(value, -1) {
		i, _ := strconv.Atoi(value[m[2]:m[3]])
		if i >= len(pl.c.values) {
			continue
		}
		pl.seen[i]++
		pl.lands[i] = l
		if problem == "" && backslashes && oddBackslashes(value[:m[0]]) {
			problem = "follows a backslash, which would take the quoting of the value apart; remove the backslash"
		}
		if pl.problems[i] == "" {
			pl.problems[i] = problem
		}
	}
}

// problems joins one error per value that cannot be placed safely: the
// {{.x}} of the advice is the action as written.
func (c *commandValues) problems(pl *placement, actions []action) error {
	var errs []error
	said := map[string]bool{} // a range prints an action many times
	for i := range c.values {
		why := pl.problems[i]
		if why == "" && pl.seen[i] != 1 {
			why = cannotQuote
		}
		if why == "" {
			continue
		}
		a := action{line: 1, src: "the value"}
		if c.actions[i] < len(actions) {
			a = actions[c.actions[i]]
		}
		err := fmt.Errorf("line %d: %s %s", a.line, a.src, strings.ReplaceAll(why, "{{.x}}", a.src))
		if !said[err.Error()] {
			said[err.Error()] = true
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// oddBackslashes reports whether s ends in an odd number of backslashes:
// the next character is escaped.
func oddBackslashes(s string) bool {
	n := 0
	for n < len(s) && s[len(s)-1-n] == '\\' {
		n++
	}
	return n%2 == 1
}

// landingOf says where a literal (a *syntax.Lit or *syntax.SglQuoted) is,
// from its ancestors (stack, the innermost last), or why a value cannot be
// there.
func landingOf(n syntax.Node, stack []syntax.Node) (landing, string) {
	if len(stack) == 0 {
		return landWord, cannotQuote
	}
	var l landing
	switch n := n.(type) {
	case *syntax.SglQuoted:
		if n.Dollar {
			return l, "is inside $'...', where backslashes are escapes; use '...' or \"...\", or no quotes"
		}
		l = landSingle
	case *syntax.Lit:
		switch stack[len(stack)-1].(type) {
		case *syntax.Word:
			l = landWord
		case *syntax.DblQuoted:
			l = landDouble
		case *syntax.ParamExp:
			return l, "is right after $ or inside ${...}, where it would be read as a variable name or an expansion; set a variable first (x={{.x}}) and use ${x}"
		case *syntax.Assign:
			return l, "is the name of a variable; a value cannot name one"
		case *syntax.WordIter:
			return l, "is the name of a for loop's variable; a value cannot name one"
		case *syntax.FuncDecl:
			return l, "is the name of a function; a value cannot name one"
		default:
			return l, cannotQuote
		}
	}
	child := n
	for i := len(stack) - 1; i >= 0; i-- {
		switch a := stack[i].(type) {
		case *syntax.Word, *syntax.File, *syntax.Stmt, *syntax.CallExpr, *syntax.BinaryCmd,
			*syntax.Block, *syntax.Subshell, *syntax.IfClause, *syntax.WhileClause,
			*syntax.ForClause, *syntax.WordIter, *syntax.CaseClause, *syntax.CaseItem,
			*syntax.FuncDecl, *syntax.TimeClause, *syntax.DeclClause, *syntax.TestClause,
			*syntax.BinaryTest, *syntax.UnaryTest, *syntax.ParenTest:
		case *syntax.DblQuoted:
			if a.Dollar {
				return l, "is inside $\"...\"; use \"...\" or no quotes"
			}
		case *syntax.Assign:
			if child != a.Value {
				return l, "is in an array or an index, where the shell reads it as code; set a variable first (x={{.x}}) and use \"$x\""
			}
		case *syntax.Redirect:
			if a.Hdoc == child || a.Op == syntax.Hdoc || a.Op == syntax.DashHdoc {
				return l, "is inside a here-document, where quotes are not read; set a variable first (x={{.x}}) and write $x in the here-document"
			}
		case *syntax.CmdSubst:
			if a.Backquotes {
				return l, "is inside `...`, where the shell reads a value as code; set a variable first (x={{.x}}) and use \"$x\" inside"
			}
			return l, "is inside $(...), where the shell reads a value as code; set a variable first (x={{.x}}) and use \"$x\" inside"
		case *syntax.ProcSubst:
			return l, "is inside <(...) or >(...); set a variable first (x={{.x}}) and use \"$x\" inside"
		case *syntax.ParamExp:
			return l, "is inside ${...}, where it would be read as a pattern or an expansion; set a variable first (x={{.x}}) and use \"$x\""
		case *syntax.ArithmExp, *syntax.ArithmCmd, *syntax.LetClause, *syntax.BinaryArithm,
			*syntax.UnaryArithm, *syntax.ParenArithm, *syntax.CStyleLoop:
			return l, "is inside arithmetic ($((...)), ((...)), let), where a value is code; set a variable first (x={{.x}}) and use \"$x\""
		case *syntax.ArrayExpr, *syntax.ArrayElem:
			return l, "is in an array or an index, where the shell reads it as code; set a variable first (x={{.x}}) and use \"$x\""
		case *syntax.ExtGlob:
			return l, "is inside an extended glob pattern; set a variable first (x={{.x}}) and use \"$x\""
		default:
			return l, cannotQuote
		}
		child = stack[i]
	}
	return l, ""
}

const cannotQuote = "is where vibeteam cannot quote a value for the shell; set a variable first (x={{.x}}) and use \"$x\""
