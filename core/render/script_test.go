package render

import (
	"bytes"
	"os"
	"os/exec"
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
		{name: "in double quotes", text: `echo "{{.x}}"`, vars: map[string]string{"x": "v"}, want: `echo "'v'"`,
			wantWarnings: []string{`step "lint": command: {{.x}} is inside "...": the value is quoted already, so these quotes become part of it; remove them`}},
		{name: "in single quotes", text: "echo '{{.x}}'", vars: map[string]string{"x": "v"}, want: "echo ''v''",
			wantWarnings: []string{`step "lint": command: {{.x}} is inside '...': these quotes undo the quoting of the value, which can then run as shell code; remove them`}},
		{name: "in quotes with text around", text: "echo \"id: {{.x}}!\" \\\" {{.x}}", vars: map[string]string{"x": "v"}, want: `echo "id: 'v'!" \" 'v'`,
			wantWarnings: []string{`step "lint": command: {{.x}} is inside "...": the value is quoted already, so these quotes become part of it; remove them`}},
		{name: "quotes closed before the value", text: `echo "a" '{b}' {{.x}}`, vars: map[string]string{"x": "v"}, want: `echo "a" '{b}' 'v'`},
		{name: "an apostrophe in double quotes", text: `echo "it's" {{.x}}`, vars: map[string]string{"x": "v"}, want: `echo "it's" 'v'`},
		{name: "line of a warning", text: "true\necho \"{{.x}}\"", vars: map[string]string{"x": "v"}, want: "true\necho \"'v'\"",
			wantWarnings: []string{`step "lint": command: line 2: {{.x}} is inside "...": the value is quoted already, so these quotes become part of it; remove them`}},
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
	for _, tt := range tests {
		_, _, err := s.Command("t", tt.text)
		if err == nil || err.Error() != tt.want {
			t.Errorf("%q: error = %v, want %s", tt.text, err, tt.want)
		}
	}
}

func TestCommandWarningsWithoutRendering(t *testing.T) {
	// Preview has no results yet: warnings come from the text alone.
	w, err := CommandWarnings("s", `gh pr create --title "{{.impl.summary}}" --body {{raw .body}}`)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`step "s": command: {{.impl.summary}} is inside "...": the value is quoted already, so these quotes become part of it; remove them`,
		`step "s": command: {{raw}} inserts a value unescaped: make sure it cannot hold text from an agent, a bead or a file`,
	}
	if strings.Join(w, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings = %q", w)
	}
	if _, err := CommandWarnings("s", "{{if}}"); err == nil {
		t.Error("a template that does not parse is not an error")
	}
}

// runPrintf renders `printf %s {{.x}}`, runs it with /bin/sh in an empty
// directory, and checks that it printed exactly x and did nothing else.
func runPrintf(t *testing.T, x string) {
	s := NewScope("", map[string]string{"x": x})
	cmd, _, err := s.Command("fuzz", "printf %s {{.x}}")
	if strings.IndexByte(x, 0) >= 0 {
		if err == nil {
			t.Fatalf("a NUL byte was let through: %q", cmd)
		}
		return
	}
	if err != nil {
		t.Fatalf("Command(%q): %v", x, err)
	}
	dir := t.TempDir()
	c := exec.Command("/bin/sh", "-c", cmd)
	c.Dir = dir
	// A value that escaped its quotes would find these to run.
	c.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "PWNED=pwned"}
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	if err := c.Run(); err != nil {
		t.Fatalf("x = %q: command %q: %v (stderr %q)", x, cmd, err, stderr.String())
	}
	if stdout.String() != x {
		t.Fatalf("x = %q: command %q printed %q", x, cmd, stdout.String())
	}
	if stderr.Len() > 0 {
		t.Fatalf("x = %q: command %q wrote to stderr: %q", x, cmd, stderr.String())
	}
	if entries, _ := os.ReadDir(dir); len(entries) > 0 {
		t.Fatalf("x = %q: command %q created %s", x, cmd, entries[0].Name())
	}
}

// FuzzCommandQuoting: for any string x, `printf %s {{.x}}` run by /bin/sh
// prints exactly x: no value escapes its word. The seeds run in every
// `go test`; `go test -fuzz FuzzCommandQuoting ./core/render/` searches.
func FuzzCommandQuoting(f *testing.F) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		f.Skip("no /bin/sh")
	}
	for _, s := range []string{
		"", "plain", "two words", "it's", "'", "''", `"`, `\`, `\'`, `'\''`,
		"$(touch pwned)", "`touch pwned`", "; touch pwned", "&& touch pwned", "| tee pwned",
		"> pwned", "$PWNED", "${PWNED}", "$((1+1))", "*", "?", "[a]", "~", "~root",
		"a\nb", "\ntouch pwned\n", "-n", "--", "%s %d", `\n`, "!", "#", "{a,b}", "a\tb",
		"\x01\x7f", "é ü 漢字", "\xff\xfe", "x\x00y", strings.Repeat("'\"", 100),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, x string) {
		runPrintf(t, x)
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
