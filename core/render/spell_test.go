package render

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// project writes files (path relative to a new base dir → content).
func project(t *testing.T, files map[string]string) string {
	t.Helper()
	base := t.TempDir()
	for p, content := range files {
		full := filepath.Join(base, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return base
}

func TestSpellsLoad(t *testing.T) {
	base := project(t, map[string]string{
		".vibeteam/spells/mine.md":      "vibeteam mine",
		".coven/spells/mine.md":         "coven mine",
		".coven/spells/coven-only.md":   "coven only",
		".vibeteam/spells/implement.md": "my implement",
		".vibeteam/spells/sub/part.md":  "in a folder",
	})
	if err := os.Mkdir(filepath.Join(base, ".vibeteam/spells/dir.md"), 0o755); err != nil {
		t.Fatal(err)
	}
	sp := NewSpells(base)
	tests := []struct {
		ref, wantText, wantSource, wantErr string
	}{
		{ref: "mine", wantText: "vibeteam mine", wantSource: ".vibeteam/spells/mine.md"},
		{ref: "mine.md", wantText: "vibeteam mine", wantSource: ".vibeteam/spells/mine.md"},
		{ref: "coven-only", wantText: "coven only", wantSource: ".coven/spells/coven-only.md"},
		{ref: "implement", wantText: "my implement", wantSource: ".vibeteam/spells/implement.md"},
		{ref: "review", wantSource: "builtin:review.md"},
		{ref: "fix-tests", wantSource: "builtin:fix-tests.md"},
		{ref: " mine ", wantText: "vibeteam mine", wantSource: ".vibeteam/spells/mine.md"},
		{ref: "sub/part", wantText: "in a folder", wantSource: ".vibeteam/spells/sub/part.md"},
		{ref: "Do this\nand that {{.goal}}", wantText: "Do this\nand that {{.goal}}", wantSource: "inline"},
		{ref: "mine\n", wantText: "mine\n", wantSource: "inline"}, // a newline makes it inline, even at the end
		{ref: "reveiw", wantErr: `spell "reveiw" not found (looked for .vibeteam/spells/reveiw.md, .coven/spells/reveiw.md, and among the built-in spells); did you mean "review"?`},
		{ref: "nothing-like-it", wantErr: `spell "nothing-like-it" not found (looked for .vibeteam/spells/nothing-like-it.md, .coven/spells/nothing-like-it.md, and among the built-in spells)`},
		{ref: "../secret", wantErr: `spell "../secret": a spell name is a file name in a spells folder, not a path`},
		{ref: "/etc/passwd", wantErr: `spell "/etc/passwd": a spell name is a file name in a spells folder, not a path`},
		{ref: "", wantErr: `spell "": the name is empty`},
		{ref: "dir", wantErr: `spell "dir": .vibeteam/spells/dir.md: is a directory, not a regular file`},
	}
	for _, tt := range tests {
		t.Run(tt.ref, func(t *testing.T) {
			s, err := sp.Load(tt.ref)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Errorf("error = %v\nwant    %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Source != tt.wantSource || tt.wantText != "" && s.Text != tt.wantText {
				t.Errorf("got %q from %s, want %q from %s", s.Text, s.Source, tt.wantText, tt.wantSource)
			}
		})
	}
}

// A spell or a partial resolves inside the spell folders or not at all: a
// symbolic link that leads out of them (to a file, or a folder) is an
// error, whatever name reaches it (a bead's text may name a partial). A
// link inside the folders, and a spell folder that is itself a link, work.
func TestSpellsStayInsideTheirFolders(t *testing.T) {
	base := project(t, map[string]string{
		".vibeteam/spells/real.md": "real {{include \"leak\"}}",
		"secret/key.md":            "SECRET",
		"shared/spells/mine.md":    "shared mine {{include \"alias\"}}",
		"shared/spells/other.md":   "other",
	})
	outside := filepath.Join(t.TempDir(), "outside.md")
	if err := os.WriteFile(outside, []byte("SECRET"), 0o644); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{
		".vibeteam/spells/leak.md": outside,
		".vibeteam/spells/rel.md":  "../../secret/key.md",
		".vibeteam/spells/sub":     filepath.Join(base, "secret"),
		".coven/spells":            filepath.Join(base, "shared/spells"),
		"shared/spells/alias.md":   "other.md",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(base, link)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(base, link)); err != nil {
			t.Fatal(err)
		}
	}
	sp := NewSpells(base)
	for ref, want := range map[string]string{
		"leak":    `spell "leak": .vibeteam/spells/leak.md leads out of .vibeteam/spells (a symbolic link): a spell resolves inside the spell folders or not at all`,
		"rel":     `spell "rel": .vibeteam/spells/rel.md leads out of .vibeteam/spells (a symbolic link)`,
		"sub/key": `spell "sub/key": .vibeteam/spells/sub/key.md leads out of .vibeteam/spells (a symbolic link)`,
	} {
		if s, err := sp.Load(ref); err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(s.Text, "SECRET") {
			t.Errorf("%s: %q, %v\nwant %s", ref, s.Text, err, want)
		}
	}
	// A partial named by a bead's title is refused the same way.
	s := NewScope("", nil)
	s.SetBead(map[string]any{"title": "sub/key"})
	if out, err := s.AgentPrompt("a", sp, "Do it.\n{{include .bead.title}}", nil); err == nil || !strings.Contains(err.Error(), `partial "sub/key": .vibeteam/spells/sub/key.md leads out of .vibeteam/spells`) || strings.Contains(out, "SECRET") {
		t.Errorf("partial through a link: %q, %v", out, err)
	}
	if out, err := s.AgentPrompt("a", sp, "real", nil); err == nil || !strings.Contains(err.Error(), `partial "leak"`) || strings.Contains(out, "SECRET") {
		t.Errorf("partial through a link: %q, %v", out, err)
	}
	// Links that stay inside work.
	if got, err := sp.Load("mine"); err != nil || got.Text != "shared mine {{include \"alias\"}}" {
		t.Errorf("a linked spell folder: %q, %v", got.Text, err)
	}
	if out, err := s.AgentPrompt("a", sp, "mine", nil); err != nil || !strings.Contains(out, "shared mine other") {
		t.Errorf("a link inside a folder: %q, %v", out, err)
	}
}

// The built-in spells render with a bead, and without one (until beads
// land, .bead is empty), and ask for the output contract's outputs.
func TestBuiltinSpells(t *testing.T) {
	sp := NewSpells(t.TempDir())
	bead := map[string]any{"id": "bd-7", "title": "Add login", "description": "A login page.", "acceptance_criteria": "Users can log in."}
	tests := []struct {
		spell  string
		bead   bool
		inputs map[string]string
		want   []string
	}{
		{"implement", true, nil, []string{"# Implement bd-7: Add login", "A login page.", "## Acceptance criteria\n\nUsers can log in.", "changed_files"}},
		{"implement", false, nil, []string{"# Task\n\nShip it", "changed_files"}},
		{"fix-tests", true, map[string]string{"test_output": "FAIL: TestLogin"}, []string{"bd-7: Add login", "```\nFAIL: TestLogin\n```", "cause"}},
		{"fix-tests", false, nil, []string{"The goal of this work: Ship it", "```\nprevious output\n```"}},
		{"review", true, nil, []string{"bd-7: Add login", "Users can log in.", "approved", "findings"}},
		{"review", false, nil, []string{"The goal of the change: Ship it", "approved"}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s bead=%v", tt.spell, tt.bead), func(t *testing.T) {
			s := NewScope("Ship it", nil)
			if tt.bead {
				s.SetBead(bead)
			}
			s.Record("tests", "", StepResult{Output: "previous output", Failed: true})
			got, err := s.AgentPrompt("step", sp, tt.spell, tt.inputs)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range append(tt.want, "```json", `"success": true`, "You are one step of an automated workflow") {
				if !strings.Contains(got, w) {
					t.Errorf("prompt lacks %q:\n%s", w, got)
				}
			}
			if strings.Contains(got, "{{") || strings.Contains(got, "<no value>") {
				t.Errorf("unrendered template in:\n%s", got)
			}
		})
	}
}

func TestAgentPrompt(t *testing.T) {
	base := project(t, map[string]string{
		".vibeteam/spells/fix.md": "Fix {{.bead.title}}: {{.test_output}} after {{.implement.summary}}",
	})
	sp := NewSpells(base)
	s := NewScope("g", nil)
	s.SetBead(map[string]any{"title": "Login"})
	s.Record("implement", "", StepResult{Summary: "did it"})
	got, err := s.AgentPrompt("fix", sp, "fix", map[string]string{"test_output": "FAIL {{.raw}}"})
	if err != nil {
		t.Fatal(err)
	}
	// An input is already rendered: its text is not a template again.
	if !strings.Contains(got, "Fix Login: FAIL {{.raw}} after did it") {
		t.Errorf("prompt:\n%s", got)
	}
	// The system prompt wraps the spell.
	if !strings.HasPrefix(got, "You are one step") || !strings.Contains(got, "```json") {
		t.Errorf("no system prompt around:\n%s", got)
	}

	inline := "Line one {{.goal}}\nline two {{.nope}}"
	_, err = s.AgentPrompt("fix", sp, inline, nil)
	if want := `step "fix": inline spell: line 2: no step or variable "nope"`; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error = %v, want %s...", err, want)
	}
	_, err = s.AgentPrompt("fix", sp, "fix", nil)
	if want := `step "fix": spell "fix" (.vibeteam/spells/fix.md): line 1: no step or variable "test_output"`; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error = %v, want %s...", err, want)
	}
	_, err = s.AgentPrompt("fix", sp, "fix", map[string]string{"previous": "x"})
	if want := `step "fix": input "previous": the name is reserved`; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error = %v, want %s...", err, want)
	}
	_, err = s.AgentPrompt("fix", sp, "nope", nil)
	if want := `step "fix": spell "nope" not found`; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error = %v, want %s...", err, want)
	}
}

func TestSystemPrompt(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string
		want    string
		wantErr string
	}{
		{name: "built-in", want: "You are one step of an automated workflow"},
		{name: "project", files: map[string]string{".vibeteam/system-prompt.md": "SYS {{.goal}}\n{{ .spell_content }}\nEND"}, want: "SYS g\nSPELL\nEND"},
		{name: "coven's", files: map[string]string{".coven/system-prompt.md": "COVEN {{- .spell_content -}} END"}, want: "COVENSPELLEND"},
		{name: "vibeteam's first", files: map[string]string{".vibeteam/system-prompt.md": "V{{.spell_content}}", ".coven/system-prompt.md": "C{{.spell_content}}"}, want: "VSPELL"},
		{name: "without the spell", files: map[string]string{".vibeteam/system-prompt.md": "Be nice. {{.goal}}"},
			wantErr: `step "s": system prompt .vibeteam/system-prompt.md: must contain {{.spell_content}}, where the spell of each agent step goes`},
		{name: "error in it", files: map[string]string{".vibeteam/system-prompt.md": "{{.spell_content}} {{.nope}}"},
			wantErr: `step "s": system prompt (.vibeteam/system-prompt.md): line 1: no step or variable "nope"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sp := NewSpells(project(t, tt.files))
			got, err := NewScope("g", nil).AgentPrompt("s", sp, "SPELL\n", nil)
			switch {
			case tt.wantErr != "":
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Errorf("error = %v\nwant    %s", err, tt.wantErr)
				}
			case err != nil:
				t.Fatal(err)
			case !strings.Contains(got, tt.want):
				t.Errorf("got %q, want it to contain %q", got, tt.want)
			}
		})
	}
}

func TestIncludes(t *testing.T) {
	base := project(t, map[string]string{
		".vibeteam/spells/greet.md":      "Hello {{.name}} ({{.goal}})",
		".coven/spells/coven-part.md":    "from coven",
		".vibeteam/spells/outer.md":      `[{{include "inner.md" depth="1"}}]`,
		".vibeteam/spells/inner.md":      "inner {{.depth}}",
		".vibeteam/spells/bad.md":        "line one\n{{.nope}}",
		".vibeteam/spells/calls-bad.md":  "x\n{{include \"bad.md\"}}",
		".vibeteam/spells/obj.md":        "{{.o.k}} {{.o}}",
		".vibeteam/spells/a.md":          `{{include "b.md"}}`,
		".vibeteam/spells/b.md":          `{{include "a.md"}}`,
		".vibeteam/spells/self.md":       `{{include "self"}}`,
		".vibeteam/spells/d1.md":         `1{{include "d2.md"}}`,
		".vibeteam/spells/d2.md":         `2{{include "d3.md"}}`,
		".vibeteam/spells/d3.md":         `3{{include "d4.md"}}`,
		".vibeteam/spells/d4.md":         `4{{include "d5.md"}}`,
		".vibeteam/spells/d5.md":         `5{{include "d6.md"}}`,
		".vibeteam/spells/d6.md":         `6`,
		".vibeteam/spells/tricky.md":     `{{.v}}`,
		".vibeteam/spells/hidden-dir.md": `x`,
	})
	sp := NewSpells(base)
	tests := []struct {
		name, spell, want, wantErr string
	}{
		{name: "literal key", spell: "A\n" + `{{include "greet.md" name="World"}}`, want: "A\nHello World (the goal)"},
		{name: "context key", spell: "A\n" + `{{include "greet.md" name={{.bead.title}}}}`, want: "A\nHello Login (the goal)"},
		{name: "context key with a pipeline", spell: "A\n" + `{{include "greet.md" name={{printf "%s!" .bead.title}}}}`, want: "A\nHello Login! (the goal)"},
		{name: "context key with braces in a string", spell: "A\n" + `{{include "greet.md" name={{printf "}}%s" .bead.title}}}}`, want: "A\nHello }}Login (the goal)"},
		{name: "Go form", spell: "A\n" + `{{include "greet.md" "name" .bead.title}}`, want: "A\nHello Login (the goal)"},
		{name: "name without .md", spell: "A\n" + `{{include "greet" name="x"}}`, want: "A\nHello x (the goal)"},
		{name: "partial sees the scope", spell: "A\n" + `{{include "greet.md" name={{.implement.output}}}}`, want: "A\nHello built (the goal)"},
		{name: "several keys and trim markers", spell: "A\n  {{- include \"tricky.md\" v=\"1\" w=`2` -}}  \nB", want: "A1B"},
		{name: "bare operand", spell: "A\n" + `{{include "tricky.md" v=.goal}}`, want: "A\nthe goal"},
		{name: "object value", spell: "A\n" + `{{include "obj.md" o={{.implement.outputs}}}}`, want: "A\nv {\"k\":\"v\"}"},
		{name: "found in .coven", spell: "A\n{{include \"coven-part.md\"}}", want: "A\nfrom coven"},
		{name: "found among the built-ins", spell: "A\n{{include \"review.md\"}}", want: "A\n# Review the change"},
		{name: "nested", spell: "A\n{{include \"outer.md\"}}", want: "A\n[inner 1]"},
		{name: "five levels", spell: "A\n{{include \"d2.md\"}}", want: "A\n23456"},
		{name: "six levels", spell: "A\n{{include \"d1.md\"}}",
			wantErr: "includes nest deeper than 5: inline spell -> d1.md -> d2.md -> d3.md -> d4.md -> d5.md -> d6.md"},
		{name: "cycle", spell: "A\n{{include \"a.md\"}}", wantErr: "include cycle: inline spell -> a.md -> b.md -> a.md"},
		{name: "self", spell: "A\n{{include \"self.md\"}}", wantErr: "include cycle: inline spell -> self.md -> self.md"},
		{name: "error inside a partial", spell: "A\n{{include \"calls-bad.md\"}}",
			wantErr: `line 2: include "calls-bad" (.vibeteam/spells/calls-bad.md): line 2: include "bad" (.vibeteam/spells/bad.md): line 2: no step or variable "nope" (a step is there once it has finished; a variable is set with --set nope=...)`},
		{name: "missing partial", spell: "A\n{{include \"nope.md\"}}",
			wantErr: `line 2: partial "nope" not found (looked for .vibeteam/spells/nope.md, .coven/spells/nope.md, and among the built-in spells)`},
		{name: "path as partial", spell: "A\n{{include \"../x.md\"}}",
			wantErr: `line 2: include "../x.md": a spell name is a file name in a spells folder, not a path`},
		{name: "odd arguments", spell: "A\n{{include \"greet.md\" \"name\"}}",
			wantErr: `line 2: include "greet.md": the arguments after the name must be pairs of a key and a value`},
		{name: "bad pair", spell: "A\n{{include \"greet.md\" a=\"1\" \"b\"}}",
			wantErr: `line 2: include: expected key=value, found "\"b\"}}"`},
		{name: "unclosed value", spell: "A\n{{include \"greet.md\" a={{.x\n",
			wantErr: `line 2: include: a=: "{{.x" is not closed with }}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewScope("the goal", nil)
			s.SetBead(map[string]any{"title": "Login"})
			s.Record("implement", "", StepResult{Output: "built", Outputs: map[string]any{"k": "v"}})
			r := &run{mode: modeText, data: s.data("s"), scope: s, spells: sp, chain: []string{"inline spell"}}
			got, err := r.renderLimited("spell", tt.spell)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Errorf("error = %v\nwant    %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestRewriteIncludes(t *testing.T) {
	tests := []struct {
		in, want, wantErr string
	}{
		{in: "no include here", want: "no include here"},
		{in: "the word include {{.x}}", want: "the word include {{.x}}"},
		{in: `{{include "a.md"}}`, want: `{{include "a.md"}}`},
		{in: `{{include "a.md" "k" .v}}`, want: `{{include "a.md" "k" .v}}`},
		{in: `{{include "a.md" k="v"}}`, want: `{{include "a.md" "k" "v"}}`},
		{in: `{{ include "a.md" k="v" }}`, want: `{{ include "a.md" "k" "v"}}`},
		{in: `{{- include "a.md" k="v" -}}`, want: `{{- include "a.md" "k" "v" -}}`},
		{in: `{{include "a.md" k={{.bead.title}}}}`, want: `{{include "a.md" "k" (.bead.title)}}`},
		{in: `{{include "a.md" k={{- .x -}}}}`, want: `{{include "a.md" "k" ( .x )}}`},
		{in: `{{include "a.md" k="v" j={{.x}}}} and {{include "b.md" z="}}"}}`, want: `{{include "a.md" "k" "v" "j" (.x)}} and {{include "b.md" "z" "}}"}}`},
		{in: `{{include "a.md" k="q\"uote"}}`, want: `{{include "a.md" "k" "q\"uote"}}`},
		{in: "{{include \"a.md\"\n  k=\"v\"\n  j=\"w\"}}\nnext", want: "{{include \"a.md\" \"k\" \"v\" \"j\" \"w\"\n\n}}\nnext"},
		{in: `{{include .name k="v"}}`, want: `{{include (.name) "k" "v"}}`},
		{in: `{{/* include "a.md" k="v" */}}`, want: `{{/* include "a.md" k="v" */}}`},
		{in: "x\n{{include \"a.md\" k=}}", wantErr: `line 2: include: k=: a value is missing before "}}"`},
		{in: `{{include "a.md" k="v`, wantErr: `line 1: include: k=: unterminated string "\"v"`},
		{in: `{{include "a.md" k="v"`, wantErr: `line 1: include: the action is not closed with }}`},
	}
	for _, tt := range tests {
		got, err := rewriteIncludes(tt.in)
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("rewriteIncludes(%q) error = %v\nwant %s", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("rewriteIncludes(%q)\n = %q, %v\nwant %q", tt.in, got, err, tt.want)
		}
	}
}

func TestSpellsCheck(t *testing.T) {
	base := project(t, map[string]string{
		".vibeteam/spells/ok.md":       `{{include "part.md" k="v"}}{{if .x}}{{include "part"}}{{end}}`,
		".vibeteam/spells/part.md":     "part {{.k}}",
		".vibeteam/spells/cycle.md":    `{{if .never}}{{include "cycle2.md"}}{{end}}`,
		".vibeteam/spells/cycle2.md":   `{{include "cycle.md"}}`,
		".vibeteam/spells/missing.md":  "a\n{{with .x}}{{include \"gone.md\"}}{{end}}",
		".vibeteam/spells/syntax.md":   "a\n{{.x",
		".vibeteam/spells/badpart.md":  `{{include "syntax.md"}}`,
		".vibeteam/spells/dynamic.md":  `{{include .name}}`,
		".vibeteam/spells/builtin2.md": `{{include "implement.md"}}`,
	})
	sp := NewSpells(base)
	tests := []struct{ ref, wantErr string }{
		{ref: "ok"},
		{ref: "dynamic"}, // a name known only at run time is checked then
		{ref: "builtin2"},
		{ref: "implement"},
		{ref: "fix-tests"},
		{ref: "review"},
		{ref: "inline\n{{.x}}"},
		{ref: "cycle", wantErr: `spell "cycle" (.vibeteam/spells/cycle.md): include cycle: cycle.md -> cycle2.md -> cycle.md`},
		{ref: "missing", wantErr: `spell "missing" (.vibeteam/spells/missing.md): partial "gone" not found (looked for .vibeteam/spells/gone.md, .coven/spells/gone.md, and among the built-in spells)`},
		{ref: "syntax", wantErr: `spell "syntax" (.vibeteam/spells/syntax.md): line 2: unclosed action`},
		{ref: "badpart", wantErr: `spell "badpart" (.vibeteam/spells/badpart.md): include "syntax" (.vibeteam/spells/syntax.md): line 2: unclosed action`},
		{ref: "nope", wantErr: `spell "nope" not found (looked for .vibeteam/spells/nope.md, .coven/spells/nope.md, and among the built-in spells)`},
		{ref: "inline\n{{include \"gone\"}}", wantErr: `inline spell: partial "gone" not found (looked for .vibeteam/spells/gone.md, .coven/spells/gone.md, and among the built-in spells)`},
	}
	for _, tt := range tests {
		err := sp.Check(tt.ref)
		if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || err.Error() != tt.wantErr) {
			t.Errorf("Check(%q) = %v\nwant %s", tt.ref, err, tt.wantErr)
		}
	}
	bad := NewSpells(project(t, map[string]string{".vibeteam/system-prompt.md": "no place for the spell"}))
	if err := bad.Check("implement"); err == nil || !strings.Contains(err.Error(), "must contain {{.spell_content}}") {
		t.Errorf("Check with a bad system prompt = %v", err)
	}
}
