package render

import (
	"os/exec"
	"strings"
	"testing"
)

// The functions of coven's renderer, as coven's spells use them.
func TestCovenFunctions(t *testing.T) {
	tests := []struct {
		name, text, want string
	}{
		{"default of an empty value", `{{.empty | default "No spec path provided"}}`, "No spec path provided"},
		{"default keeps a value", `{{.target | default "x"}}`, "src/auth"},
		{"default of a null output", `[{{.implement.outputs.none | default "{}"}}]`, "[{}]"},
		{"join a list", `{{join ", " .bead.labels}}`, "ui, auth"},
		{"join changed files", `{{.implement.changed_files | join " "}}`, "a.go b.go"},
		{"upper", `{{.bead.title | upper}}`, "LOGIN PAGE"},
		{"lower", `{{lower .bead.title}}`, "login page"},
		{"trim", `[{{trim .padded}}]`, "[a b]"},
		{"indent", `{{indent 2 .lines}}`, "  one\n  two"},
		{"nindent", `{{nindent 2 .lines}}`, "\n  one\n  two"},
		{"quote", `{{quote .v}}`, `"say \"hi\""`},
		{"squote", `{{squote .target}}`, `'src/auth'`},
		{"replace", `{{.target | replace "/" "-"}}`, "src-auth"},
		{"toJson", `{{toJson .bead.labels}}`, `["ui","auth"]`},
		{"contains in a condition", `{{if contains "auth" .target}}yes{{end}}`, "yes"},
		{"list functions", `{{first .bead.labels}} {{len (list 1 2 3)}}`, "ui 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := testScope()
			s.Vars["empty"] = ""
			s.Vars["padded"] = "  a b \n"
			s.Vars["lines"] = "one\ntwo"
			s.Vars["v"] = `say "hi"`
			got, err := s.Render("fix", "input.x", tt.text)
			if err != nil {
				t.Fatalf("Render(%q): %v", tt.text, err)
			}
			if got != tt.want {
				t.Errorf("Render(%q) = %q, want %q", tt.text, got, tt.want)
			}
		})
	}
}

// The functions work in stage prompts too.
func TestPromptFunctions(t *testing.T) {
	got, err := Prompt("t", `{{.name | upper}} {{.none | default "x"}}`, map[string]string{"name": "ada", "none": ""}, "")
	if err != nil || got != "ADA x" {
		t.Fatalf("Prompt = %q, %v; want %q", got, err, "ADA x")
	}
}

// Nothing that reads the environment, the clock, the network or a random
// source, and nothing that changes the scope.
func TestFunctionsAreHermetic(t *testing.T) {
	for _, name := range []string{"env", "expandenv", "now", "date", "randAlpha", "randInt", "uuidv4", "getHostByName", "ago", "set", "unset", "merge"} {
		s := testScope()
		_, err := s.Render("fix", "input.x", "{{"+name+"}}")
		if err == nil || !strings.Contains(err.Error(), `function "`+name+`" not defined`) {
			t.Errorf("{{%s}}: err = %v, want not defined", name, err)
		}
	}
}

// A function whose result is far larger than its arguments is bounded.
func TestFunctionsBounded(t *testing.T) {
	for _, text := range []string{
		`{{repeat 1000000000 "abcdefgh"}}`,
		`{{indent 1000000000 "a"}}`,
		`{{range until 1000000000}}{{end}}`,
		`{{range untilStep 0 1000000000 1}}{{end}}`,
		`{{seq 1000000000}}`,
	} {
		s := testScope()
		_, err := s.Render("fix", "input.x", text)
		if err == nil || !strings.Contains(err.Error(), "would") {
			t.Errorf("%s: err = %v, want a bound", text, err)
		}
	}
}

// In a script command a function's result is one value, quoted where it
// lands like any other.
func TestCommandFunctions(t *testing.T) {
	s := testScope()
	s.Vars["v"] = `it's $(rm -rf /)`
	for _, tt := range []struct{ text, want string }{
		{`printf '%s\n' {{.v | upper}}`, "IT'S $(RM -RF /)\n"},
		{`printf '%s\n' "title: {{.v | quote}}"`, `title: "it's $(rm -rf /)"` + "\n"},
		{`printf '%s\n' {{.missing_is_set | default "none"}}`, "none\n"},
		{`printf '%s\n' {{join "," .bead.labels}}`, "ui,auth\n"},
	} {
		s.Vars["missing_is_set"] = ""
		cmd, _, err := s.Command("report", tt.text)
		if err != nil {
			t.Fatalf("Command(%q): %v", tt.text, err)
		}
		out, err := exec.Command("sh", "-c", cmd).Output()
		if err != nil || string(out) != tt.want {
			t.Errorf("Command(%q) = %q printed %q, %v; want %q", tt.text, cmd, out, err, tt.want)
		}
	}
}
