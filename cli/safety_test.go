package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hostileTitle is a bead title made to break out of "..." and run a
// command: touch PWNED.
const hostileTitle = `x"; touch PWNED; echo "`

// noPWNED fails if a file named PWNED* exists anywhere under dir.
func noPWNED(t *testing.T, dir string) {
	t.Helper()
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), "PWNED") {
			t.Errorf("a value ran as a command: %s exists", path)
		}
		return nil
	})
}

// A bead's title reaches a script step byte for byte, in "...", in '...'
// and as a word, with the real binary, /bin/sh and a real worktree, and
// nothing in it runs.
func TestHostileBeadTitleIsQuotedWhereItLands(t *testing.T) {
	t.Parallel()
	p := newBeadProject(t)
	p.write(".vibeteam/grimoires/quote.yaml", `name: quote
steps:
  - name: write
    type: script
    command: |
      printf '%s' "{{.bead.title}}" > dq.txt
      printf '%s' '{{.bead.title}}' > sq.txt
      printf '%s' {{.bead.title}} > word.txt
      printf '%s' "title: {{.bead.title}} ({{.bead.id}})" > mixed.txt
`)
	p.write("bead.json", `{"id": "bd-1", "title": "x\"; touch PWNED; echo \"", "description": "$(touch PWNED2) `+"`touch PWNED3`"+` '; touch PWNED4; '"}`)
	r := p.exec("run", "quote", "--bead-file", "bead.json")
	wantCode(t, r, 0)
	for file, want := range map[string]string{"dq.txt": hostileTitle, "sq.txt": hostileTitle, "word.txt": hostileTitle,
		"mixed.txt": "title: " + hostileTitle + " (bd-1)"} {
		if got := p.read(".worktrees/bd-1/" + file); got != want {
			t.Errorf("%s = %q, want %q", file, got, want)
		}
	}
	noPWNED(t, p.dir)

	// The built-in prepare-pr puts the bead's title and description in its
	// command: they run nothing either, and the title is printed whole.
	p.write("bead2.json", `{"id": "bd-2", "title": "x\"; touch PWNED; echo \"", "description": "$(touch PWNED2) `+"`touch PWNED3`"+` '; touch PWNED4; '"}`)
	p.git("add", "bead2.json")
	p.git("commit", "-q", "-m", "work")
	cmd := p.command("run", "prepare-pr", "--bead-file", "bead2.json")
	cmd.Env = append(cmd.Env, "PATH=/usr/bin:/bin") // no gh
	r = runResult(t, cmd)
	wantCode(t, r, 0)
	printed := ""
	for _, s := range p.sessions() {
		if s.Bead["id"] == "bd-2" && s.Runs["1"] != nil {
			printed = s.Runs["1"].Output
		}
	}
	if !strings.Contains(printed, "--title '"+hostileTitle+"'") {
		t.Errorf("pr step printed %q", printed)
	}
	noPWNED(t, p.dir)
}

// A value the shell would read as code is an error at validate, preview
// and run, with the file and line, exit 2, and nothing runs.
func TestUnquotableValueIsAnError(t *testing.T) {
	t.Parallel()
	p := newBeadProject(t)
	p.write(".vibeteam/grimoires/subst.yaml", `name: subst
steps:
  - name: first
    type: script
    command: touch first-ran
  - name: greet
    type: script
    command: |
      echo start
      echo "$(echo {{.bead.title}})"
`)
	p.write("bead.json", `{"id": "bd-1", "title": "x\"; touch PWNED; echo \""}`)
	const want = `.vibeteam/grimoires/subst.yaml:8:14: steps[1].command: template line 2: {{.bead.title}} is inside $(...), where the shell reads a value as code`
	for _, args := range [][]string{
		{"validate", ".vibeteam/grimoires/subst.yaml"},
		{"preview", "subst", "--bead-file", "bead.json"},
		{"run", "subst", "--bead-file", "bead.json"},
	} {
		r := p.exec(args...)
		wantCode(t, r, 2)
		if !strings.Contains(r.stderr, want) {
			t.Errorf("%v: stderr does not say %q:\n%s", args, want, r.stderr)
		}
		if strings.Contains(r.stderr+r.stdout, "warning") {
			t.Errorf("%v: a warning, where it is an error:\n%s%s", args, r.stdout, r.stderr)
		}
	}
	if p.exists(".worktrees/bd-1/first-ran") || p.exists("first-ran") {
		t.Error("a step ran")
	}
	noPWNED(t, p.dir)
}

// A label chooses a grimoire by name: a path (relative, climbing out, or
// absolute) is refused with exit 2, naming the bead and the label, and the
// file it names does not run. So is a path in config.yaml.
func TestGrimoireLabelIsANameNotAPath(t *testing.T) {
	t.Parallel()
	outside := filepath.Join(t.TempDir(), "outside")
	evil := filepath.Join(outside, "evil.yaml")
	marker := filepath.Join(outside, "EVIL-RAN")
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(evil, []byte("name: evil\nsteps:\n  - name: s\n    type: script\n    command: touch "+marker+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	labels := []string{"", "grimoire:" + evil, "grimoire:evil.yaml", "grimoire:../outside/evil"}
	var list []map[string]any
	for i, l := range labels {
		list = append(list, bead(fmt.Sprintf("bd-%d", i+1), "t", map[string]any{"labels": []any{l}}))
	}
	p := newBeadProject(t, list...)
	// bd-1's label climbs from the project to the file.
	rel, err := filepath.Rel(p.dir, evil)
	if err != nil || !strings.HasPrefix(rel, "../") {
		t.Fatalf("relative path %q: %v", rel, err)
	}
	labels[0] = "grimoire:" + rel
	p.writeBead(t, 0, labels[0])
	// A file in the project itself, named with its extension, is a path
	// too: `vibeteam run evil.yaml` would take it from the directory.
	p.write("evil.yaml", "name: evil\nsteps:\n  - name: s\n    type: script\n    command: touch "+marker+"\n")
	for i, label := range labels {
		id := fmt.Sprintf("bd-%d", i+1)
		for _, cmd := range [][]string{{"run", "--bead", id}, {"preview", "--bead", id}} {
			r := p.bdExec(cmd...)
			wantCode(t, r, 2)
			if want := "bead " + id + ": label " + label + ": "; !strings.Contains(r.stderr, want) {
				t.Errorf("%v with %s: stderr does not name the bead and the label (%q):\n%s", cmd, label, want, r.stderr)
			}
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the file a label named ran")
	}
	if n := len(p.sessions()); n != 0 {
		t.Errorf("%d sessions were made", n)
	}
	// config.yaml's names are checked when it is read, with its line.
	p.writeBead(t, 0, "other")
	p.write(".vibeteam/config.yaml", "grimoires:\n  default: "+evil+"\n")
	r := p.bdExec("run", "--bead", "bd-1")
	wantCode(t, r, 2)
	if want := `.vibeteam/config.yaml:2:12: grimoires.default: "` + evil + `" is an absolute path`; !strings.Contains(r.stderr, want) {
		t.Errorf("config: stderr does not say %q:\n%s", want, r.stderr)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the file config.yaml named ran")
	}
}

// writeBead sets the one label of bead bd-(i+1) in the fake bd's database.
func (p *beadProject) writeBead(t *testing.T, i int, label string) {
	t.Helper()
	db := map[string]map[string]any{}
	readJSON(t, p.db, &db)
	db[fmt.Sprintf("bd-%d", i+1)]["labels"] = []any{label}
	data, err := json.Marshal(db)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p.db, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
