package acp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"syscall"
	"time"
)

// Handshake starts command (args, env over vibeteam's environment, in
// dir), asks it initialize within timeout, and stops it: what `vibeteam
// doctor` reports of an ACP agent. Its process group is stopped, since an
// ACP adapter's child (the claude CLI) can outlive it.
func Handshake(ctx context.Context, agent, command string, args []string, env map[string]string, dir string, timeout time.Duration) (AgentInfo, error) {
	cmd := exec.Command(command, args...)
	cmd.Dir = dir
	cmd.Env = os.Environ()
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		cmd.Env = append(cmd.Env, k+"="+env[k])
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return AgentInfo{}, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return AgentInfo{}, err
	}
	if err := cmd.Start(); err != nil {
		return AgentInfo{}, fmt.Errorf("agent %s: %w", agent, err)
	}
	c := Start(stdin, stdout, Options{Agent: agent, InitTimeout: timeout})
	info, err := c.Initialize(ctx)
	if err != nil && errors.Is(c.Err(), errAgentGone) {
		err = fmt.Errorf("agent %s exited before it answered initialize", agent)
	}
	_ = stdin.Close()
	// The agent exits when its stdin closes; a moment's grace, then its
	// group is killed (children that outlive it too).
	done := make(chan struct{})
	go func() {
		_ = c.Wait()
		_ = cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-done
	return info, err
}

// Describe is the agent's handshake in a line: its name, protocol and
// capabilities.
func (a AgentInfo) Describe() string {
	s := fmt.Sprintf("protocol %d", a.ProtocolVersion)
	if n := a.Name(); n != "" {
		s = n + ", " + s
	}
	caps := a.AgentCapabilities
	if caps.LoadSession {
		s += ", loadSession"
	}
	s += ", mcp: " + caps.MCPCapabilities.describe()
	var prompt []string
	if caps.PromptCapabilities.Image {
		prompt = append(prompt, "image")
	}
	if caps.PromptCapabilities.Audio {
		prompt = append(prompt, "audio")
	}
	if caps.PromptCapabilities.EmbeddedContext {
		prompt = append(prompt, "embeddedContext")
	}
	if len(prompt) > 0 {
		s += ", prompt: " + fmt.Sprint(prompt)
	}
	return s
}
