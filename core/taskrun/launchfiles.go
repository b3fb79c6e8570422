package taskrun

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/vibeteam/vibeteam/adapters"
	"github.com/vibeteam/vibeteam/core/events"
	"github.com/vibeteam/vibeteam/core/runner"
	"github.com/vibeteam/vibeteam/core/workflow"
)

// mcpServers are the task's MCP servers for its adapter, each command
// checked first: the agent CLI starts them, and one that is not there
// fails inside the agent, where nobody sees it. A missing command is a
// warning (the agent runs without that server), or with strict the task's
// failure.
func mcpServers(host Host, t workflow.Task, dir string, strict bool) ([]adapters.MCPServer, error) {
	var out []adapters.MCPServer
	for _, s := range t.MCP {
		if problem := missingCommand(s.Command, dir); problem != "" {
			msg := fmt.Sprintf("task %s: MCP server %s: %s", t.ID, s.Name, problem)
			if strict {
				return nil, fmt.Errorf("%s (--strict)", msg)
			}
			host.Emit(t.ID, events.Warn{Warning: msg})
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

// writeLaunchFiles writes the files an agent needs before it starts (its
// CLI's settings for MCP servers) to a directory of their own, and puts
// each one's path in the environment variable it names. cleanup removes
// them once the agent is gone.
func writeLaunchFiles(spec *runner.Spec, files []adapters.LaunchFile) (cleanup func(), err error) {
	dir, err := os.MkdirTemp("", "vibeteam-launch-")
	if err != nil {
		return func() {}, err
	}
	cleanup = func() { _ = os.RemoveAll(dir) }
	env := make(map[string]string, len(spec.Env)+len(files))
	for k, v := range spec.Env {
		env[k] = v
	}
	for i, f := range files {
		if f.Home != "" {
			home := filepath.Join(dir, fmt.Sprintf("%d-home", i))
			if err := overlayHome(home, f); err != nil {
				return cleanup, err
			}
			env[f.Env] = home
			continue
		}
		path := filepath.Join(dir, fmt.Sprintf("%d-%s.json", i, strings.ToLower(f.Env)))
		if err := os.WriteFile(path, f.Data, 0o600); err != nil {
			return cleanup, err
		}
		env[f.Env] = path
	}
	spec.Env = env
	return cleanup, nil
}

// overlayHome makes home a stand-in for the user's home as one CLI sees
// it: home/f.Home mirrors ~/f.Home entry by entry (symlinks, so logins and
// what the CLI writes there stay the user's), except f.Name, a copy of the
// user's JSON with f.Data's keys merged over it (an object merges key by
// key: the user's own MCP servers stay).
func overlayHome(home string, f adapters.LaunchFile) error {
	dst := filepath.Join(home, f.Home)
	if err := os.MkdirAll(dst, 0o700); err != nil {
		return err
	}
	var settings map[string]any
	if userHome, err := os.UserHomeDir(); err == nil {
		src := filepath.Join(userHome, f.Home)
		entries, _ := os.ReadDir(src)
		for _, e := range entries {
			if e.Name() == f.Name {
				continue
			}
			if err := os.Symlink(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())); err != nil {
				return err
			}
		}
		if data, err := os.ReadFile(filepath.Join(src, f.Name)); err == nil {
			if err := json.Unmarshal(data, &settings); err != nil {
				return fmt.Errorf("%s: %w (MCP servers are merged into it)", filepath.Join(src, f.Name), err)
			}
		}
	}
	var add map[string]any
	if err := json.Unmarshal(f.Data, &add); err != nil {
		return err
	}
	if settings == nil {
		settings = map[string]any{}
	}
	for k, v := range add {
		mine, ok1 := settings[k].(map[string]any)
		more, ok2 := v.(map[string]any)
		if ok1 && ok2 {
			for mk, mv := range more {
				mine[mk] = mv
			}
			continue
		}
		settings[k] = v
	}
	data, err := json.MarshalIndent(settings, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dst, f.Name), data, 0o600)
}
