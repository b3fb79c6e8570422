package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

// doctor asks an ACP adapter's agent for the protocol's handshake and
// shows its protocol version and capabilities; an agent that never
// answers is a warning within the timeout, not a hang.
func TestDoctorACPHandshake(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	for name, script := range map[string]string{
		"speaks": `{"loadSession": true, "http": true}`,
		"mute":   `{"init": "never"}`,
	} {
		p.write(name+".json", script)
		p.write(".vibeteam/adapters/"+name+".yaml", "command: "+fakeACP+"\nmodes:\n  acp:\n    args: [--stdio]\n    env: { FAKEACP_SCRIPT: "+p.path(name+".json")+" }\n")
	}
	p.stageWorkflow("speaks", "mute")
	r := p.exec("doctor", "wf.yaml", "--timeout", "500ms")
	wantCode(t, r, 0)
	if b := block(t, r.stdout, "speaks"); !strings.Contains(b, "✓ acp      "+fakeACP+" --stdio: fakeacp 1.0.0, protocol 1, loadSession, mcp: stdio, http, prompt: [embeddedContext]") {
		t.Errorf("speaks:\n%s", b)
	}
	if b := block(t, r.stdout, "mute"); !strings.Contains(b, "! acp      agent mute ("+fakeACP+" --stdio) did not answer initialize within 500ms") {
		t.Errorf("mute:\n%s", b)
	}
	r = p.exec("doctor", "wf.yaml", "--timeout", "500ms", "--json")
	var reports []struct {
		Adapter string `json:"adapter"`
		ACP     *struct {
			Command     string   `json:"command"`
			Protocol    int      `json:"protocol"`
			Agent       string   `json:"agent"`
			LoadSession bool     `json:"loadSession"`
			MCP         []string `json:"mcp"`
			Error       string   `json:"error"`
		} `json:"acp"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &reports); err != nil || len(reports) != 2 {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	mute, speaks := reports[0].ACP, reports[1].ACP
	if speaks == nil || speaks.Protocol != 1 || speaks.Agent != "fakeacp 1.0.0" || !speaks.LoadSession || strings.Join(speaks.MCP, ",") != "stdio,http" {
		t.Errorf("speaks: %+v", speaks)
	}
	if mute == nil || !strings.Contains(mute.Error, "did not answer initialize") {
		t.Errorf("mute: %+v", mute)
	}
}
