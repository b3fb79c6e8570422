package cli

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A sandbox: block on a loop reaches the steps inside it, and one on a
// stage step reaches its tasks: their writes to the paths it lists go
// through.
func TestALoopsAndAStagesSandboxReachTheStepsInside(t *testing.T) {
	needBwrap(t)
	t.Parallel()
	h := newHostileSetup(t)
	loopDir, stageDir := filepath.Join(h.home, "loop-cache"), filepath.Join(h.home, "stage-cache")
	for _, d := range []string{loopDir, stageDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	h.write(".vibeteam/grimoires/nested.yaml", strings.NewReplacer("LOOP", loopDir, "STAGE", stageDir).Replace(`name: nested
steps:
  - name: l
    type: loop
    max_iterations: 1
    sandbox: {write: [LOOP]}
    steps:
      - name: build
        type: script
        command: echo built > LOOP/out.txt
        on_success: exit_loop
  - name: s
    type: stage
    sandbox: {write: [STAGE]}
    tasks:
      - { id: t, adapter: fake, executionMode: headless, prompt: "write=STAGE/out.txt:made" }
`))
	r := h.run("run", "nested", "--sandbox")
	wantCode(t, r, 0)
	if s := h.only(); s.Sandbox == nil {
		t.Fatal("the run was not sandboxed")
	}
	for path, want := range map[string]string{filepath.Join(loopDir, "out.txt"): "built\n", filepath.Join(stageDir, "out.txt"): "made"} {
		if b, err := os.ReadFile(path); err != nil || string(b) != want {
			t.Errorf("%s holds %q (%v), want %q\nstderr:\n%s", path, b, err, want, r.stderr)
		}
	}
}

// A step's own network and allow: are what its process gets from the
// proxy: with the workflow's allow: a script step reaches the port, one
// with network: none does not (its refusal is in the log), and one that
// allows a port the workflow does not reaches it.
func TestAStepsOwnNetworkIsWhatTheProxyLetsThrough(t *testing.T) {
	needBwrap(t)
	t.Parallel()
	h := newHostileSetup(t)
	other, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	go func() {
		for {
			c, err := other.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	hostile := fmt.Sprintf("hostile -base %s -addr", h.dir)
	h.write(".vibeteam/grimoires/net.yaml", strings.NewReplacer("ADDR", h.addr, "OTHER", other.Addr().String(), "HOSTILE", hostile).Replace(`name: net
sandbox: {allow: ["ADDR"]}
steps:
  - name: open
    type: script
    command: HOSTILE ADDR -report open.txt >/dev/null
  - name: closed
    type: script
    sandbox: {network: none}
    command: HOSTILE ADDR -report closed.txt >/dev/null
  - name: more
    type: script
    sandbox: {allow: ["OTHER"]}
    command: HOSTILE OTHER -report more.txt >/dev/null
`))
	r := h.run("run", "net", "--sandbox")
	wantCode(t, r, 0)
	through := func(addr string) string { return "connect " + addr + " through the proxy: " }
	for file, want := range map[string]string{
		"open.txt":   through(h.addr) + "escaped: tunnel open",
		"closed.txt": through(h.addr) + "held: the proxy answered HTTP/1.1 403",
		"more.txt":   through(other.Addr().String()) + "escaped: tunnel open",
	} {
		if got := h.read(file); !strings.Contains(got, want) {
			t.Errorf("%s lacks %q:\n%s", file, want, got)
		}
	}
	if lg := h.exec("log", h.only().ID); !strings.Contains(lg.stdout, "sandbox refused a connection to 127.0.0.1:"+h.addr[strings.LastIndexByte(h.addr, ':')+1:]+" (sandbox network is none)") {
		t.Errorf("log does not name the refused host:\n%s", lg.stdout)
	}
}
