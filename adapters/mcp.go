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
	MCPClaude   = "claude"   // --mcp-config=<json> --strict-mcp-config; tools mcp__NAME
	MCPCodex    = "codex"    // -c mcp_servers.NAME.command=… -c …args=[…] -c …env={…}
	MCPGemini   = "gemini"   // GEMINI_CLI_HOME: ~/.gemini mirrored, mcpServers merged into its settings.json
	MCPOpencode = "opencode" // OPENCODE_CONFIG_CONTENT={"mcp": {NAME: {type: local, command: […]}}}
)

// MCPFormats are the formats an adapter file may name.
var MCPFormats = []string{MCPClaude, MCPCodex, MCPGemini, MCPOpencode}

// LaunchFile is a file the agent needs written before it starts; its path
// goes in the environment variable Env. With Home set, Env names a home
// directory instead: a new one that mirrors the user's Home directory
// (~/.gemini), with the file Name in it being the user's own JSON with
// Data's keys merged over it. The user's files are never written.
type LaunchFile struct {
	Env  string
	Data []byte
	Home string // e.g. ".gemini"
	Name string // e.g. "settings.json"
}

// mcpLaunch is how a CLI is given MCP servers: arguments, environment, and
// files to write (whose paths go in the environment).
type mcpLaunch struct {
	args  []string
	env   map[string]string
	files []LaunchFile
}

// mcpConfig gives the CLI servers, in format; with autoApprove, the
// servers' tools are allowed too.
func mcpConfig(format string, servers []MCPServer, autoApprove bool) (mcpLaunch, error) {
	switch format {
	case MCPGemini:
		cfg := map[string]any{}
		for _, s := range servers {
			entry := map[string]any{"command": s.Command, "args": nonNil(s.Args)}
			if len(s.Env) > 0 {
				entry["env"] = s.Env
			}
			if autoApprove {
				// An untrusted server's tools are not registered in -p.
				entry["trust"] = true
			}
			cfg[s.Name] = entry
		}
		// Gemini reads MCP servers from its user settings only (not from a
		// system settings file): a home of its own (GEMINI_CLI_HOME) that
		// mirrors ~/.gemini — logins included — with the servers merged
		// into a copy of settings.json.
		data, err := json.Marshal(map[string]any{"mcpServers": cfg})
		return mcpLaunch{files: []LaunchFile{{Env: "GEMINI_CLI_HOME", Data: data, Home: ".gemini", Name: "settings.json"}}}, err
	case MCPOpencode:
		cfg := map[string]any{}
		for _, s := range servers {
			entry := map[string]any{"type": "local", "command": append([]string{s.Command}, s.Args...), "enabled": true}
			if len(s.Env) > 0 {
				entry["environment"] = s.Env
			}
			cfg[s.Name] = entry
		}
		data, err := json.Marshal(map[string]any{"mcp": cfg})
		return mcpLaunch{env: map[string]string{"OPENCODE_CONFIG_CONTENT": string(data)}}, err
	}
	args, err := mcpArgs(format, servers, autoApprove)
	return mcpLaunch{args: args}, err
}

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
