package adapters

import (
	"strings"
	"testing"
)

func TestMCPArgs(t *testing.T) {
	t.Parallel()
	servers := []MCPServer{
		{Name: "ra", Command: "/opt/fake mcp", Args: []string{"--x", `q"uote`}, Env: map[string]string{"B": "2", "A": "1"}},
		{Name: "fs", Command: "npx", Args: nil},
	}
	got, err := mcpArgs(MCPClaude, servers, true)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`--mcp-config={"mcpServers":{"fs":{"args":[],"command":"npx","type":"stdio"},"ra":{"args":["--x","q\"uote"],"command":"/opt/fake mcp","env":{"A":"1","B":"2"},"type":"stdio"}}}`,
		"--strict-mcp-config",
		"--allowedTools=mcp__ra mcp__fs",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("claude:\n got %q\nwant %q", got, want)
	}
	got, _ = mcpArgs(MCPCodex, servers, true)
	want = []string{
		"-c", `mcp_servers.ra.command="/opt/fake mcp"`, "-c", `mcp_servers.ra.args=["--x", "q\"uote"]`,
		"-c", `mcp_servers.ra.env={"A" = "1", "B" = "2"}`, "-c", `mcp_servers.ra.default_tools_approval_mode="approve"`,
		"-c", `mcp_servers.fs.command="npx"`, "-c", `mcp_servers.fs.args=[]`, "-c", `mcp_servers.fs.default_tools_approval_mode="approve"`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("codex:\n got %q\nwant %q", got, want)
	}
	if got, _ := mcpArgs(MCPCodex, servers[1:], false); strings.Contains(strings.Join(got, " "), "approval") {
		t.Errorf("approved without --auto-approve: %q", got)
	}
	if _, err := mcpArgs("", servers, false); err == nil || !strings.Contains(err.Error(), "no mcp:") {
		t.Errorf("no format: %v", err)
	}
}

// The servers go before the prompt, after the adapter's own arguments.
func TestLaunchConfigGivesMCPServers(t *testing.T) {
	t.Parallel()
	reg := NewRegistry()
	ad, err := reg.New("claude", Options{MCP: []MCPServer{{Name: "ra", Command: "fakemcp"}}})
	if err != nil {
		t.Fatal(err)
	}
	lc, err := ad.LaunchConfig(Headless, "hi", nil)
	if err != nil {
		t.Fatal(err)
	}
	argv := strings.Join(lc.Args, " ")
	if !strings.Contains(argv, `--mcp-config={"mcpServers":{"ra":`) || !strings.HasSuffix(argv, "--strict-mcp-config -- hi") {
		t.Errorf("argv: %s", argv)
	}
	ad, _ = reg.New("shell", Options{MCP: []MCPServer{{Name: "ra", Command: "fakemcp"}}})
	if _, err := ad.LaunchConfig(Headless, "true", nil); err == nil || !strings.Contains(err.Error(), "adapter shell gives no MCP servers") {
		t.Errorf("shell with MCP servers: %v", err)
	}
}
