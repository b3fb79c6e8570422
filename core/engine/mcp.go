package engine

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/vibeteam/vibeteam/adapters"
	"github.com/vibeteam/vibeteam/core/events"
	"github.com/vibeteam/vibeteam/core/workflow"
)

// workflowMCP is the MCP servers of the session's workflow.
func (x *Executor) workflowMCP() []workflow.MCPServer {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.sess.WorkflowDefinition == nil {
		return nil
	}
	return x.sess.WorkflowDefinition.MCP
}

// mcpServers are the task's MCP servers for its adapter, each command
// checked first: the agent CLI starts them, and one that is not there
// fails inside the agent, where nobody sees it. A missing command is a
// warning (the agent runs without that server), or with strict the task's
// failure.
func mcpServers(host taskHost, t workflow.Task, dir string, strict bool) ([]adapters.MCPServer, error) {
	var out []adapters.MCPServer
	for _, s := range t.MCP {
		if problem := missingCommand(s.Command, dir); problem != "" {
			msg := fmt.Sprintf("task %s: MCP server %s: %s", t.ID, s.Name, problem)
			if strict {
				return nil, fmt.Errorf("%s (--strict)", msg)
			}
			host.emit(events.Warning, t.ID, map[string]any{"warning": msg})
		}
		out = append(out, adapters.MCPServer{Name: s.Name, Command: s.Command, Args: s.Args, Env: s.Env})
	}
	return out, nil
}

// missingCommand says what is wrong with command as the agent would start
// it from dir; "" when it is there.
func missingCommand(command, dir string) string {
	if strings.Contains(command, "/") {
		path := command
		if !filepath.IsAbs(path) {
			path = filepath.Join(dir, path)
		}
		if st, err := os.Stat(path); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			return fmt.Sprintf("command %s is not an executable file", command)
		}
		return ""
	}
	if _, err := exec.LookPath(command); err != nil {
		return fmt.Sprintf("command %s is not on PATH", command)
	}
	return ""
}
