package cli

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden event logs of cli/testdata/events")

// The JSONL event log is a format others read (log --json, --events): the
// golden files fix every event's name and keys as a run writes them, so a
// change to how events are made cannot change what they say. Times, ids,
// pids, durations and temporary paths are replaced by placeholders.
func TestGoldenEventLogs(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, file, body string
		args             []string
		code             int
		files            map[string]string // more files of the project
	}{
		{name: "stages", file: "wf.yaml", code: 1, body: `id: golden
goal: the golden run
stages:
  - id: first
    tasks:
      - { id: hello, adapter: shell, executionMode: headless, prompt: "echo hello" }
  - id: second
    tasks:
      - { id: fails, adapter: shell, executionMode: headless, prompt: "echo about to fail; exit 3" }
  - id: never
    tasks:
      - { id: later, adapter: shell, executionMode: headless, prompt: "echo never" }
`},
		{name: "grimoire", file: "g.yaml", code: 0, body: `name: golden
steps:
  - name: setup
    type: script
    command: echo ready
  - name: skipped
    type: script
    when: '{{eq .setup.output "nope"}}'
    command: echo never
  - name: retry
    type: loop
    max_iterations: 3
    steps:
      - name: try
        type: script
        command: test {{.retry.iteration}} -ge 2 && echo ok-{{.retry.iteration}}
        on_fail: continue
      - name: check
        type: script
        when: '{{.previous.success}}'
        command: echo passed
        on_success: exit_loop
  - name: agent
    type: agent
    adapter: fake
    spell: "say hello\n"
  - name: last
    type: script
    command: echo {{.setup.output}} done
`},
		{name: "blocked", file: "b.yaml", code: 3, body: `name: golden-blocked
steps:
  - name: broken
    type: script
    command: echo failing; exit 2
`},
		// A headless agent with a structured output: the agent.* events,
		// and the session's agent totals.
		{name: "agent", file: "wf.yaml", code: 0, body: `id: golden-agent
stages:
  - id: s
    tasks:
      - { id: t, adapter: structured, executionMode: headless, prompt: "cat=run.jsonl" }
`, files: map[string]string{
			"run.jsonl": claudeToolRun,
			".vibeteam/adapters/structured.yaml": "name: structured\ncommand: " + fakeAgent +
				"\nmodes:\n  headless:\n    args: []\n    output: claude-stream-json\n    prompt: { position: arg }\n",
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := newProject(t)
			p.write(c.file, c.body)
			for name, body := range c.files {
				p.write(name, body)
			}
			r := p.exec(append([]string{"run", c.file}, c.args...)...)
			if r.code != c.code {
				t.Fatalf("exit %d, want %d\n%s", r.code, c.code, r.stderr)
			}
			id := onlySessionID(t, p)
			data, err := os.ReadFile(filepath.Join(p.dir, ".vibeteam", "logs", id+".jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			got := normalizeEvents(string(data), p.dir, id)
			golden := filepath.Join("testdata", "events", c.name+".jsonl")
			if *updateGolden {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (go test ./cli -run TestGoldenEventLogs -update writes it; check it first)", err)
			}
			if got != string(want) {
				t.Errorf("the event log of %s differs from %s:\n%s", c.name, golden, lineDiff(string(want), got))
			}
		})
	}
}

var (
	goldenTime     = regexp.MustCompile(`"(time|startedAt|endedAt)":"[^"]*"`)
	goldenDuration = regexp.MustCompile(`"(duration_ms|durationMs|pid|elapsed_ms)":\d+`)
	goldenSecs     = regexp.MustCompile(`\b\d+(\.\d+)?(ms|µs|s)\b`)
)

// normalizeEvents replaces what differs from run to run.
func normalizeEvents(log, dir, id string) string {
	if real, err := filepath.EvalSymlinks(dir); err == nil && real != dir {
		log = strings.ReplaceAll(log, real, "$DIR")
	}
	log = strings.ReplaceAll(log, dir, "$DIR")
	log = strings.ReplaceAll(log, fakeAgent, "$FAKEAGENT")
	log = strings.ReplaceAll(log, id, "$ID")
	log = goldenTime.ReplaceAllString(log, `"$1":"T"`)
	log = goldenDuration.ReplaceAllString(log, `"$1":0`)
	return goldenSecs.ReplaceAllString(log, "N$2")
}

// lineDiff shows the lines of want and got that differ, by position.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			b.WriteString("line " + itoa(i+1) + ":\n  want " + wl + "\n  got  " + gl + "\n")
		}
	}
	return b.String()
}
