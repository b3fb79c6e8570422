// Command fakemcp is a Model Context Protocol server on stdio for tests: one
// tool, echo, which answers "echo: TEXT". Every call is appended as a JSON
// line to $FAKEMCP_LOG (when set), so a test can see that an agent really
// called it.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"time"
)

type request struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 16<<20)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var r request
		if json.Unmarshal(in.Bytes(), &r) != nil {
			continue
		}
		logCall(r)
		if len(r.ID) == 0 {
			continue // a notification
		}
		result, rpcErr := answer(r)
		resp := map[string]any{"jsonrpc": "2.0", "id": r.ID}
		if rpcErr != nil {
			resp["error"] = rpcErr
		} else {
			resp["result"] = result
		}
		if err := out.Encode(resp); err != nil {
			return
		}
	}
}

func answer(r request) (any, any) {
	switch r.Method {
	case "initialize":
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		_ = json.Unmarshal(r.Params, &p)
		if p.ProtocolVersion == "" {
			p.ProtocolVersion = "2024-11-05"
		}
		return map[string]any{
			"protocolVersion": p.ProtocolVersion,
			"capabilities":    map[string]any{"tools": map[string]any{}},
			"serverInfo":      map[string]any{"name": "fakemcp", "version": "1.0.0"},
		}, nil
	case "ping":
		return map[string]any{}, nil
	case "tools/list":
		return map[string]any{"tools": []any{map[string]any{
			"name":        "echo",
			"description": "Echoes the text it is given.",
			"inputSchema": map[string]any{
				"type":       "object",
				"properties": map[string]any{"text": map[string]any{"type": "string", "description": "what to echo"}},
				"required":   []string{"text"},
			},
		}}}, nil
	case "tools/call":
		var p struct {
			Name      string `json:"name"`
			Arguments struct {
				Text string `json:"text"`
			} `json:"arguments"`
		}
		_ = json.Unmarshal(r.Params, &p)
		if p.Name != "echo" {
			return nil, map[string]any{"code": -32602, "message": "unknown tool " + p.Name}
		}
		return map[string]any{"content": []any{map[string]any{"type": "text", "text": "echo: " + p.Arguments.Text}}}, nil
	case "resources/list":
		return map[string]any{"resources": []any{}}, nil
	case "prompts/list":
		return map[string]any{"prompts": []any{}}, nil
	}
	return nil, map[string]any{"code": -32601, "message": fmt.Sprintf("method %q not found", r.Method)}
}

func logCall(r request) {
	path := os.Getenv("FAKEMCP_LOG")
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	line, _ := json.Marshal(map[string]any{"time": time.Now().Format(time.RFC3339Nano), "method": r.Method, "params": r.Params})
	fmt.Fprintf(f, "%s\n", line)
}
