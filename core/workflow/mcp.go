package workflow

import (
	"slices"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/vibeteam/vibeteam/internal/yamlnode"
)

// MCPServer is a Model Context Protocol server an agent gets: a command it
// starts and talks to on stdio.
type MCPServer struct {
	Name    string            `json:"name"`
	Preset  string            `json:"preset,omitempty"` // the preset it came from
	Command string            `json:"command"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
}

// MCPPresets are servers known by name: `mcp: { files: filesystem }`.
var MCPPresets = map[string]MCPServer{
	// The working directory of the agent is what it may read and write.
	"filesystem": {Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-filesystem", "."}},
	"puppeteer":  {Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-puppeteer"}},
	// Its token comes from the environment vibeteam runs in.
	"github": {Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-github"}},
}

var mcpKeys = []string{"command", "args", "env", "preset"}

func presetNames() []string {
	names := make([]string, 0, len(MCPPresets))
	for n := range MCPPresets {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// mcp reads an `mcp:` map: NAME: PRESET, or NAME: {command, args, env} (or
// {preset, args, env} to add to a preset), in file order.
func (p *parser) mcp(n *yaml.Node, field string) []MCPServer {
	pairs, ok := p.Map(n, field, "")
	if !ok {
		return nil
	}
	var servers []MCPServer
	for _, kv := range pairs {
		name := kv.Key.Value
		f := field + "." + name
		if name == "" || strings.ContainsAny(name, " \t/.") {
			p.Errorf(kv.Key, f, "an MCP server's name is a word (letters, digits, - and _): agents name its tools after it")
			continue
		}
		val := p.Deref(kv.Val)
		var s MCPServer
		if val.Kind == yaml.ScalarNode {
			preset, _ := p.Text(val, f)
			s = p.preset(val, f, preset)
		} else {
			var presetNode *yaml.Node
			var preset string
			p.Visit(p.Pairs(val, f, true), f, mcpKeys, func(kv yamlnode.Pair) {
				ff := f + "." + kv.Key.Value
				switch kv.Key.Value {
				case "command":
					s.Command = p.text(kv.Val, ff)
				case "args":
					s.Args = p.Strings(kv.Val, ff, p.String)
				case "env":
					s.Env = p.Env(kv.Val, ff, p.String)
				case "preset":
					preset, presetNode = p.text(kv.Val, ff), kv.Val
				}
			})
			if presetNode != nil {
				base := p.preset(presetNode, f+".preset", preset)
				if s.Command == "" {
					s.Command = base.Command
				}
				s.Args = append(slices.Clone(base.Args), s.Args...)
				s.Preset = base.Preset
			}
			if s.Command == "" && presetNode == nil {
				p.Errorf(val, f, "needs a command (or a preset: %s)", strings.Join(presetNames(), ", "))
			}
		}
		s.Name = name
		servers = append(servers, s)
	}
	return servers
}

func (p *parser) preset(n *yaml.Node, field, name string) MCPServer {
	s, ok := MCPPresets[name]
	if !ok {
		p.Errorf(n, field, "unknown MCP preset %q%s (presets: %s; or give a command)", name, yamlnode.DidYouMean(name, presetNames()), strings.Join(presetNames(), ", "))
		return MCPServer{}
	}
	s.Args = slices.Clone(s.Args)
	s.Preset = name
	return s
}

// MergeMCP is the servers a task or step gets: the workflow's, then its
// own; on a name both have, its own wins.
func MergeMCP(workflow, own []MCPServer) []MCPServer {
	if len(own) == 0 {
		return workflow
	}
	out := make([]MCPServer, 0, len(workflow)+len(own))
	for _, s := range workflow {
		if !slices.ContainsFunc(own, func(o MCPServer) bool { return o.Name == s.Name }) {
			out = append(out, s)
		}
	}
	return append(out, own...)
}
