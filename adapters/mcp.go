package adapters

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// MCPServer is an MCP server an agent CLI is to start (stdio).
type MCPServer struct {
	Name    string
	Command string
	Args    []string
	Env     map[string]string
}

// MCP formats: how an adapter's CLI is given MCP servers (the file's mcp:
// key).
const (
	MCPClaude = "claude" // --mcp-config=<json> --strict-mcp-config; tools mcp__NAME
	MCPCodex  = "codex"  // -c mcp_servers.NAME.command=… -c …args=[…] -c …env={…}
)

// MCPFormats are the formats an adapter file may name.
var MCPFormats = []string{MCPClaude, MCPCodex}

// mcpArgs are the arguments that give the CLI servers, in format; with
// autoApprove, the servers' tools are allowed too.
func mcpArgs(format string, servers []MCPServer, autoApprove bool) ([]string, error) {
	if len(servers) == 0 {
		return nil, nil
	}
	switch format {
	case MCPClaude:
		cfg := map[string]any{}
		for _, s := range servers {
			entry := map[string]any{"type": "stdio", "command": s.Command, "args": nonNil(s.Args)}
			if len(s.Env) > 0 {
				entry["env"] = s.Env
			}
			cfg[s.Name] = entry
		}
		data, err := json.Marshal(map[string]any{"mcpServers": cfg})
		if err != nil {
			return nil, err
		}
		// The `=` form: the variadic --mcp-config would take the prompt
		// as one more config otherwise.
		args := []string{"--mcp-config=" + string(data), "--strict-mcp-config"}
		if autoApprove {
			var tools []string
			for _, s := range servers {
				tools = append(tools, "mcp__"+s.Name)
			}
			args = append(args, "--allowedTools="+strings.Join(tools, " "))
		}
		return args, nil
	case MCPCodex:
		var args []string
		for _, s := range servers {
			key := "mcp_servers." + s.Name
			args = append(args, "-c", key+".command="+tomlString(s.Command), "-c", key+".args="+tomlArray(s.Args))
			if len(s.Env) > 0 {
				keys := make([]string, 0, len(s.Env))
				for k := range s.Env {
					keys = append(keys, k)
				}
				slices.Sort(keys)
				parts := make([]string, len(keys))
				for i, k := range keys {
					parts[i] = tomlString(k) + " = " + tomlString(s.Env[k])
				}
				args = append(args, "-c", key+".env={"+strings.Join(parts, ", ")+"}")
			}
			if autoApprove {
				// exec never asks: without this its MCP calls are refused.
				args = append(args, "-c", key+`.default_tools_approval_mode="approve"`)
			}
		}
		return args, nil
	case "":
		return nil, fmt.Errorf("gives no MCP servers to its CLI (its file has no mcp:)")
	}
	return nil, fmt.Errorf("unknown MCP format %q", format)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// tomlString is s as a TOML basic string: JSON's string escapes (\", \\,
// \n, \uXXXX) are TOML's too.
func tomlString(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

func tomlArray(items []string) string {
	parts := make([]string, len(items))
	for i, it := range items {
		parts[i] = tomlString(it)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
