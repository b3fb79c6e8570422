package render

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestCommand(t *testing.T) {
	tests := []struct {
		name, text, want string
		vars             map[string]string
		wantWarnings     []string
	}{
		{name: "no template", text: "go test ./...", want: "go test ./..."},
		{name: "one word", text: "bd close {{.id}}", vars: map[string]string{"id": "foo; rm -rf /"}, want: "bd close 'foo; rm -rf /'"},
		{name: "single quote", text: "echo {{.x}}", vars: map[string]string{"x": "it's"}, want: `echo 'it'\''s'`},
		{name: "empty is still a word", text: "f {{.x}} end", vars: map[string]string{"x": ""}, want: "f '' end"},
		{name: "each range item a word", text: "ls{{range .list.outputs.files}} {{.}}{{end}}", want: "ls 'a b' 'c'"},
		{name: "list is one JSON word", text: "echo {{.list.outputs.files}}", want: `echo '["a b","c"]'`},
		{name: "raw opts out", text: "{{raw .cmd}} --flag", vars: map[string]string{"cmd": "make test"}, want: "make test --flag",
			wantWarnings: []string{`step "lint": command: {{raw}} inserts a value unescaped: make sure it cannot hold text from an agent, a bead or a file`}},
		{name: "raw at the end of a pipe", text: "{{.cmd | raw}}", vars: map[string]string{"cmd": "a b"}, want: "a b",
			wantWarnings: []string{`step "lint": command: {{raw}} inserts a value unescaped: make sure it cannot hold text from an agent, a bead or a file`}},
		{name: "raw then printf is escaped again", text: `{{raw .cmd | printf "%s"}}`, vars: map[string]string{"cmd": "a b"}, want: "'a b'",
			wantWarnings: []string{`step "lint": command: {{raw}} inserts a value unescaped: make sure it cannot hold text from an agent, a bead or a file`}},
		{name: "literal text of an if is not a value", text: "{{if .list.outputs.files}}go test{{end}}", want: "go test"},
		{name: "in double quotes", text: `echo "{{.x}}"`, vars: map[string]string{"x": "a\"$b`c\\"}, want: "echo \"a\\\"\\$b\\`c\\\\\""},
		{name: "in single quotes", text: "echo '{{.x}}'", vars: map[string]string{"x": "it's"}, want: `echo 'it'\''s'`},
		{name: "in quotes with text around", text: "echo \"id: {{.x}}!\" \\\" {{.x}}", vars: map[string]string{"x": "v"}, want: `echo "id: v!" \" 'v'`},
		{name: "quotes closed before the value", text: `echo "a" '{b}' {{.x}}`, vars: map[string]string{"x": "v"}, want: `echo "a" '{b}' 'v'`},
		{name: "an apostrophe in double quotes", text: `echo "it's {{.x}}"`, vars: map[string]string{"x": "v'"}, want: `echo "it's v'"`},
		{name: "double quotes in single quotes", text: `echo '"{{.x}}"'`, vars: map[string]string{"x": "'"}, want: `echo '"'\''"'`},
		{name: "glued to a word", text: `git commit --message={{.x}}x`, vars: map[string]string{"x": "a b"}, want: `git commit --message='a b'x`},
		{name: "assignment", text: "t={{.x}}; echo \"$t\"", vars: map[string]string{"x": "a;b"}, want: `t='a;b'; echo "$t"`},
		{name: "redirection and case", text: "case {{.x}} in {{.x}}) cat > {{.x}};; esac", vars: map[string]string{"x": "*"}, want: `case '*' in '*') cat > '*';; esac`},
		{name: "each branch placed", text: `{{if .x}}echo "{{.x}}"{{else}}echo '{{.x}}'{{end}}`, vars: map[string]string{"x": "$"}, want: `echo "\$"`},
		{name: "range items in double quotes", text: `echo "{{range .list.outputs.files}}[{{.}}]{{end}}"`, want: `echo "[a b][c]"`},
		{name: "line continuation before a value", text: "echo \\\n{{.x}}", vars: map[string]string{"x": "a b"}, want: "echo \\\n'a b'"},
		{name: "raw text is shell", text: `{{raw .c}} "{{.x}}"`, vars: map[string]string{"c": "echo", "x": "\""}, want: `echo "\""`,
			wantWarnings: []string{`step "lint": command: {{raw}} inserts a value unescaped: make sure it cannot hold text from an agent, a bead or a file`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewScope("", tt.vars)
			s.Record("list", "", StepResult{Outputs: map[string]any{"files": []any{"a b", "c"}}})
			got, warnings, err := s.Command("lint", tt.text)
			if err != nil {
				t.Fatalf("error: %v", err)
			}
			if got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
			if strings.Join(warnings, "\n") != strings.Join(tt.wantWarnings, "\n") {
				t.Errorf("warnings = %q\nwant       %q", warnings, tt.wantWarnings)
			}
		})
	}
}

func TestCommandErrors(t *testing.T) {
	s := NewScope("", map[string]string{"nul": "a\x00b"})
	s.Record("tests", "", StepResult{})
	tests := []struct{ text, want string }{
		{"echo {{.nul}}", `step "t": command: a value holds a NUL byte, which no shell command can carry`},
		{"echo {{.tests.outptu}}", `step "t": command: no key "outptu" in .tests (did you mean output?)`},
		{"echo {{.x", `step "t": command: unclosed action`},
	}
	// Where no quoting is safe, the value is an error, with its line.
	sv := NewScope("", map[string]string{"v": "x"})
	code := `set a variable first (x={{.v}}) and use "$x" inside`
	for _, tt := range []struct{ text, want string }{
		{"echo $({{.v}})", "{{.v}} is inside $(...), where the shell reads a value as code; " + code},
		{`echo "$(echo "{{.v}}")"`, "{{.v}} is inside $(...), where the shell reads a value as code; " + code},
		{"echo `echo {{.v}}`", "{{.v}} is inside `...`, where the shell reads a value as code; " + code},
		{"cat <<EOF\n{{.v}}\nEOF", "line 2: {{.v}} is inside a here-document, where quotes are not read; set a variable first (x={{.v}}) and write $x in the here-document"},
		{"cat <<'EOF'\n{{.v}}\nEOF", "line 2: {{.v}} is inside a here-document"},
		{"cat <<{{.v}}\nx\n", "the command does not parse as shell (unclosed here-document `{{.v}}`)"},
		{`echo "{{.v}}`, `the command does not parse as shell (reached EOF without closing quote ` + "`\"`)"},
		{`echo '{{.v}}`, `the command does not parse as shell (reached EOF without closing quote ` + "`'`)"},
		{"echo $(({{.v}} + 1))", "{{.v}} is inside arithmetic"},
		{"(( {{.v}} ))", "{{.v}} is inside arithmetic"},
		{"echo ${{.v}}", "{{.v}} is right after $ or inside ${...}"},
		{`echo "${{.v}}"`, "{{.v}} is right after $ or inside ${...}"},
		{"echo ${x:-{{.v}}}", "{{.v}} is inside ${...}"},
		{`echo "${x:-{{.v}}}"`, "{{.v}} is inside ${...}"},
		{"echo $'{{.v}}'", "{{.v}} is inside $'...'"},
		{`echo $"{{.v}}"`, `{{.v}} is inside $"..."`},
		{"echo \\{{.v}}", "{{.v}} follows a backslash"},
		{`echo "\{{.v}}"`, "{{.v}} follows a backslash"},
		{"echo ok # {{.v}}", "{{.v}} is inside a comment"},
		{"{{.v}}=1 true", "{{.v}} is the name of a variable"},
		{"for {{.v}} in a; do :; done", "{{.v}} is the name of a for loop's variable"},
		{"{{.v}}() { :; }", "{{.v}} is the name of a function"},
		{"a[{{.v}}]=1", "{{.v}} is in an array or an index"},
		{"a=({{.v}})", "{{.v}} is in an array or an index"},
		{"diff <(echo {{.v}}) x", "{{.v}} is inside <(...)"},
		{"true\necho \"ok\" $(cat {{.v}})\necho {{.v}} `{{.v}}`", "line 2: {{.v}} is inside $(...)"},
	} {
		// Both where validate and preview check the text, and at run time.
		_, _, err := sv.Command("t", tt.text)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), `step "t": command: `) {
			t.Errorf("%q: error = %v\nwant %s", tt.text, err, tt.want)
		}
		if _, err := CommandWarnings("t", tt.text); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("CommandWarnings(%q) = %v\nwant %s", tt.text, err, tt.want)
		}
	}
	// Two values that cannot be placed are two errors.
	_, err := CommandWarnings("t", "true\necho $({{.v}})\necho `{{.v}}`")
	if got := strings.Split(fmt.Sprint(err), "\n"); len(got) != 2 || !strings.Contains(got[0], "line 2:") || !strings.Contains(got[1], "line 3:") {
		t.Errorf("two problems: %q", got)
	}
	// A value that a run places inside $(...) through a branch a check
	// could not see is still refused when it is rendered.
	sv = NewScope("", map[string]string{"open": "$(", "close": ")", "v": "x"})
	if out, _, err := sv.Command("t", "echo {{raw .open}}{{.v}}{{raw .close}}"); err == nil || !strings.Contains(err.Error(), "{{.v}} is inside $(...)") {
		t.Errorf("raw opening $(: %q, %v", out, err)
	}
	for _, tt := range tests {
		_, _, err := s.Command("t", tt.text)
		if err == nil || err.Error() != tt.want {
			t.Errorf("%q: error = %v, want %s", tt.text, err, tt.want)
		}
	}
}

func TestCommandWarningsWithoutRendering(t *testing.T) {
	// Preview and validate have no results yet: the check is of the text
	// alone. A value in "..." is placed there; raw is a warning.
	w, err := CommandWarnings("s", `gh pr create --title "{{.impl.summary}}" --body {{raw .body}}`)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`step "s": command: {{raw}} inserts a value unescaped: make sure it cannot hold text from an agent, a bead or a file`,
	}
	if strings.Join(w, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings = %q", w)
	}
	if _, err := CommandWarnings("s", "{{if}}"); err == nil {
		t.Error("a template that does not parse is not an error")
	}
	// Every branch is checked, whether or not a run would take it.
	if _, err := CommandWarnings("s", "{{if .a}}echo {{.a}}{{else}}echo $({{.b}}){{end}}"); err == nil || !strings.Contains(err.Error(), "{{.b}} is inside $(...)") {
		t.Errorf("a value in an else branch: %v", err)
	}
}

// quotingCommand writes the value x, placed in every way a command can
// hold it, each to its own file: 1 as a word, 2 inside "...", 3 inside
// '...', 4 glued to text and quotes around it, 5 through a variable, 6
// inside a word of a for loop, 7 as the word of a case, 8 twice in one
// word, 9 in "..." on a line of its own after a line continuation.
const quotingCommand = `printf '%s' {{.x}} > 1
printf '%s' "{{.x}}" > 2
printf '%s' '{{.x}}' > 3
printf '%s' a"<{{.x}}>"'<{{.x}}>'{{.x}}b > 4
v={{.x}}; printf '%s' "$v" > 5
for w in {{.x}}; do printf '%s' "$w" > 6; done
case {{.x}} in *) printf '%s' {{.x}} > 7;; esac
printf '%s' {{.x}}{{.x}} > 8
printf '%s' \
  "{{.x}}" > 9
`

// quotingWants is what each file of quotingCommand must hold.
func quotingWants(x string) map[string]string {
	return map[string]string{"1": x, "2": x, "3": x, "4": "a<" + x + "><" + x + ">" + x + "b",
		"5": x, "6": x, "7": x, "8": x + x, "9": x}
}

// shells are the shells the quoting is tried with: /bin/sh, and bash and
// dash where they are installed.
func shells(t testing.TB) []string {
	var found []string
	seen := map[string]bool{}
	for _, sh := range []string{"/bin/sh", "bash", "dash"} {
		p, err := exec.LookPath(sh)
		if err != nil {
			continue
		}
		real, err := filepath.EvalSymlinks(p)
		if err != nil || seen[real] {
			continue
		}
		seen[real] = true
		found = append(found, p)
	}
	if len(found) == 0 {
		t.Skip("no shell")
	}
	return found
}

// runQuoting renders quotingCommand with x, runs it with each shell in an
// empty directory, and checks that each file holds exactly what it should
// and that nothing else ran: no other file, nothing on stderr, status 0.
func runQuoting(t *testing.T, shells []string, x string) {
	t.Helper()
	s := NewScope("", map[string]string{"x": x})
	cmd, _, err := s.Command("fuzz", quotingCommand)
	if strings.IndexByte(x, 0) >= 0 {
		if err == nil {
			t.Fatalf("a NUL byte was let through: %q", cmd)
		}
		return
	}
	if err != nil {
		t.Fatalf("Command(%q): %v", x, err)
	}
	wants := quotingWants(x)
	for _, sh := range shells {
		dir := t.TempDir()
		c := exec.Command(sh, "-c", cmd)
		c.Dir = dir
		// A value that escaped its quotes would find these to run.
		c.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "PWNED=pwned", "IFS= \t\n"}
		var stdout, stderr bytes.Buffer
		c.Stdout, c.Stderr = &stdout, &stderr
		if err := c.Run(); err != nil {
			t.Fatalf("%s, x = %q: command %q: %v (stderr %q)", sh, x, cmd, err, stderr.String())
		}
		if stdout.Len() > 0 || stderr.Len() > 0 {
			t.Fatalf("%s, x = %q: command %q wrote %q, %q", sh, x, cmd, stdout.String(), stderr.String())
		}
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			want, ok := wants[e.Name()]
			if !ok {
				t.Fatalf("%s, x = %q: command %q created %s", sh, x, cmd, e.Name())
			}
			got, _ := os.ReadFile(filepath.Join(dir, e.Name()))
			if string(got) != want {
				t.Fatalf("%s, x = %q: file %s holds %q, want %q\ncommand: %q", sh, x, e.Name(), got, want, cmd)
			}
		}
		if len(entries) != len(wants) {
			t.Fatalf("%s, x = %q: %d files written, want %d; command %q", sh, x, len(entries), len(wants), cmd)
		}
	}
}

// quotingSeeds are values made to break out of each kind of quoting.
func quotingSeeds() []string {
	seeds := []string{
		"", "plain", "two words", "it's", "'", "''", `"`, `\`, `\'`, `'\''`, `\"`, "\\\\", "x\\",
		`"; touch PWN; echo "`, `'; touch PWN; echo '`, `x"; touch PWNED; echo "`, "`touch PWN`", "$(touch PWN)",
		`\"; touch PWN; echo \"`, `\'; touch PWN; echo \'`, `$(touch PWN)"$(touch PWN)"'$(touch PWN)'`,
		"; touch PWN", "&& touch PWN", "| tee PWN", "> PWN", "< /etc/passwd", "$PWNED", "${PWNED}", "$((1+1))",
		"$'\\x41'", `$"x"`, "*", "?", "[a]", "~", "~root", "{a,b}", "!", "!!", "#", "# x", "a #b", "-n", "--",
		"%s %d", `\n`, "a\nb", "\ntouch PWN\n", "\n", "\r\n", "a\tb", " lead", "trail ", "  ",
		"x=1", "EOF", "\nEOF\n", "esac", ";;", ")", "(", "{", "}", "do", "done", "fi", "$", "$$", "$?", "$@", "$*",
		"$1", "${", "}}", "{{", "{{.x}}", "\\$PWNED", "\\`touch PWN\\`",
		"\x01\x7f", "é ü 漢字", "\xff\xfe", "\xc3\x28", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\x80'\x80\"\x80",
		"x\x00y", strings.Repeat("'\"", 100), strings.Repeat("\\", 7),
	}
	// Every byte but NUL: all at once, and each between letters.
	var all []byte
	for b := 1; b < 256; b++ {
		all = append(all, byte(b))
	}
	seeds = append(seeds, string(all))
	for b := 1; b < 256; b++ {
		seeds = append(seeds, "a"+string([]byte{byte(b)})+"b")
	}
	return seeds
}

// TestCommandQuotingTable runs the seeds with every shell installed.
func TestCommandQuotingTable(t *testing.T) {
	t.Parallel()
	sh := shells(t)
	for _, x := range quotingSeeds() {
		runQuoting(t, sh, x)
	}
}

// FuzzCommandQuoting: for any string x, each file quotingCommand writes
// holds exactly x (or what is around it), with /bin/sh, bash and dash, and
// nothing else runs. The seeds run in every `go test`;
// `go test -run '^$' -fuzz FuzzCommandQuoting ./core/render/` searches.
func FuzzCommandQuoting(f *testing.F) {
	sh := shells(f)
	for _, s := range []string{"", `"; touch PWN; echo "`, `'; touch PWN; echo '`, "$(touch PWN)`touch PWN`\n\\", "\xff\x80'\""} {
		f.Add(s)
	}
	// Random strings over the characters that mean something to a shell.
	rng := rand.New(rand.NewPCG(17, 17))
	const alphabet = " \t\n'\"\\$`;&|<>()[]{}*?~#!=%^,.:/-+@aZ9\x01\x7f\xff\xc3"
	for range 64 {
		b := make([]byte, 1+rng.IntN(24))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		f.Add(string(b))
	}
	f.Fuzz(func(t *testing.T, x string) {
		runQuoting(t, sh, x)
	})
}

func TestShellQuote(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "''"},
		{"a", "'a'"},
		{"it's", `'it'\''s'`},
		{"''", `''\'''\'''`},
		{"a\nb", "'a\nb'"},
	}
	for _, tt := range tests {
		if got := ShellQuote(tt.in); got != tt.want {
			t.Errorf("ShellQuote(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
