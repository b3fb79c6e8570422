package acp

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vibeteam/vibeteam/core/agentstream"
)

var fakeACP string // testdata/fakeacp, built once

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "fakeacp")
	if err != nil {
		panic(err)
	}
	fakeACP = filepath.Join(dir, "fakeacp")
	if out, err := exec.Command("go", "build", "-o", fakeACP, "../../testdata/fakeacp").CombinedOutput(); err != nil {
		panic("build fakeacp: " + err.Error() + "\n" + string(out))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// fake is one fakeacp process and the client on it.
type fake struct {
	t      *testing.T
	dir    string // the session's cwd, and the agent's state
	log    string
	cmd    *exec.Cmd
	client *Client
	mu     sync.Mutex
	events []agentstream.Event
}

// startFake starts fakeacp with script (JSON) in dir (a new one when "").
func startFake(t *testing.T, dir, script string, opts Options) *fake {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	f := &fake{t: t, dir: dir, log: filepath.Join(dir, "acp.log")}
	if err := os.WriteFile(filepath.Join(dir, "script.json"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	f.cmd = exec.Command(fakeACP)
	f.cmd.Env = append(os.Environ(), "FAKEACP_SCRIPT="+filepath.Join(dir, "script.json"), "FAKEACP_LOG="+f.log, "FAKEACP_STATE="+dir)
	stdin, err := f.cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := f.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := f.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if opts.Agent == "" {
		opts.Agent = "fake (fakeacp)"
	}
	opts.OnEvent = func(ev agentstream.Event) {
		f.mu.Lock()
		f.events = append(f.events, ev)
		f.mu.Unlock()
	}
	f.client = Start(stdin, stdout, opts)
	t.Cleanup(func() { f.stop(stdin) })
	return f
}

func (f *fake) stop(stdin interface{ Close() error }) {
	_ = stdin.Close()
	if err := f.client.Err(); err != nil && !errors.Is(err, errAgentGone) {
		// The client stopped reading (a message too long): the agent
		// may be blocked writing; the driver stops it, as here.
		_ = f.cmd.Process.Kill()
	}
	done := make(chan struct{})
	go func() { _ = f.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = f.cmd.Process.Kill()
		<-done
	}
	_ = f.client.Wait()
}

// session initializes and makes a session in the fake's dir.
func (f *fake) session() Session {
	f.t.Helper()
	ctx := context.Background()
	if _, err := f.client.Initialize(ctx); err != nil {
		f.t.Fatal(err)
	}
	s, err := f.client.NewSession(ctx, f.dir, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	return s
}

func (f *fake) kinds() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, ev := range f.events {
		s := string(ev.Kind)
		switch ev.Kind {
		case agentstream.Message:
			s += ":" + ev.Text
		case agentstream.ToolCall, agentstream.ToolResult:
			s += ":" + ev.ToolID + ":" + ev.Status
		}
		out = append(out, s)
	}
	return out
}

// received are the messages the fake got with method.
func (f *fake) received(method string) []json.RawMessage {
	data, _ := os.ReadFile(f.log)
	var out []json.RawMessage
	for _, line := range strings.Split(string(data), "\n") {
		var m struct {
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal([]byte(line), &m) != nil {
			continue
		}
		switch {
		case method == "" && m.Method == "" && m.Result != nil:
			out = append(out, m.Result) // answers to the fake's requests
		case method != "" && m.Method == method:
			out = append(out, m.Params)
		}
	}
	return out
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
