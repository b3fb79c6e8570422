package workflow

import (
	"reflect"
	"strings"
	"testing"
)

func TestMCPServersAreRead(t *testing.T) {
	t.Parallel()
	def, err := Parse([]byte(`id: w
mcp:
  files: filesystem
  ra: { command: ./fakemcp, args: [--x], env: { K: v } }
  gh: { preset: github, args: [--read-only] }
stages:
  - id: s
    tasks:
      - { id: t, adapter: shell, prompt: "true", mcp: { ra: { command: other } } }
`), "wf.yaml", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []MCPServer{
		{Name: "files", Preset: "filesystem", Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-filesystem", "."}},
		{Name: "ra", Command: "./fakemcp", Args: []string{"--x"}, Env: map[string]string{"K": "v"}},
		{Name: "gh", Preset: "github", Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-github", "--read-only"}},
	}
	if !reflect.DeepEqual(def.MCP, want) {
		t.Errorf("workflow mcp:\n got %+v\nwant %+v", def.MCP, want)
	}
	task := def.Stages()[0].Tasks[0]
	merged := MergeMCP(def.MCP, task.MCP)
	var names []string
	for _, s := range merged {
		names = append(names, s.Name+"="+s.Command)
	}
	if got := strings.Join(names, " "); got != "files=npx gh=npx ra=other" {
		t.Errorf("merged: %s (the task's ra wins)", got)
	}
	// MCPPresets is not changed by a preset's use.
	if len(MCPPresets["github"].Args) != 2 {
		t.Errorf("the preset was changed: %v", MCPPresets["github"].Args)
	}
}

func TestMCPErrors(t *testing.T) {
	t.Parallel()
	for yaml, want := range map[string]string{
		"id: w\nmcp:\n  fs: filesystm\nstages: [{id: s, tasks: [{id: t, adapter: shell, prompt: x}]}]\n":       `wf.yaml:3:7: mcp.fs: unknown MCP preset "filesystm" (did you mean "filesystem"?)`,
		"id: w\nmcp:\n  fs: { args: [x] }\nstages: [{id: s, tasks: [{id: t, adapter: shell, prompt: x}]}]\n":   `wf.yaml:3:7: mcp.fs: needs a command`,
		"id: w\nmcp:\n  fs: { comand: x }\nstages: [{id: s, tasks: [{id: t, adapter: shell, prompt: x}]}]\n":   `unknown key "comand" (did you mean "command"?)`,
		"id: w\nmcp:\n  a.b: { command: x }\nstages: [{id: s, tasks: [{id: t, adapter: shell, prompt: x}]}]\n": `wf.yaml:3:3: mcp.a.b: an MCP server's name is a word`,
		"name: g\nsteps:\n  - name: a\n    type: agent\n    spell: implement\n    mcp: { x: puppeter }\n":      `wf.yaml:6:15: steps[0].mcp.x: unknown MCP preset "puppeter" (did you mean "puppeteer"?)`,
	} {
		_, err := Parse([]byte(yaml), "wf.yaml", LoadOptions{})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q:\n got %v\nwant %s", yaml, err, want)
		}
	}
}
