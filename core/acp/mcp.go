package acp

import (
	"fmt"
	"sort"
)

// MCP server transports.
const (
	MCPStdio = "stdio"
	MCPHTTP  = "http"
	MCPSSE   = "sse"
)

// MCPServer is an MCP server for the agent to connect to in its session.
type MCPServer struct {
	Name    string
	Type    string // MCPStdio ("" too), MCPHTTP or MCPSSE
	Command string // stdio
	Args    []string
	Env     map[string]string
	URL     string // http, sse
	Headers map[string]string
}

// mcpWire is servers as session/new and session/load take them, as far as
// the agent's capabilities allow: stdio always (every agent takes it),
// http and sse when advertised. agent names the agent in the error.
func mcpWire(agent string, caps MCPCapabilities, servers []MCPServer) ([]any, error) {
	out := make([]any, 0, len(servers))
	for _, s := range servers {
		switch s.Type {
		case "", MCPStdio:
			args := s.Args
			if args == nil {
				args = []string{}
			}
			out = append(out, map[string]any{"name": s.Name, "command": s.Command, "args": args, "env": pairs(s.Env)})
		case MCPHTTP, MCPSSE:
			if s.Type == MCPHTTP && !caps.HTTP || s.Type == MCPSSE && !caps.SSE {
				return nil, fmt.Errorf("agent %s does not take %s MCP servers (its mcpCapabilities: %s), and MCP server %q is one",
					agent, s.Type, caps.describe(), s.Name)
			}
			out = append(out, map[string]any{"type": s.Type, "name": s.Name, "url": s.URL, "headers": pairs(s.Headers)})
		default:
			return nil, fmt.Errorf("MCP server %q: unknown transport %q (stdio, http or sse)", s.Name, s.Type)
		}
	}
	return out, nil
}

// describe lists the transports the agent takes.
func (c MCPCapabilities) describe() string {
	s := "stdio"
	if c.HTTP {
		s += ", http"
	}
	if c.SSE {
		s += ", sse"
	}
	return s
}

// pairs is a map as the protocol's list of {name, value}, sorted by name.
func pairs(m map[string]string) []nameValue {
	out := make([]nameValue, 0, len(m))
	for k, v := range m {
		out = append(out, nameValue{Name: k, Value: v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
