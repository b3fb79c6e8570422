//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/vibeteam/vibeteam/core/runner"
	"github.com/vibeteam/vibeteam/e2e/fakeanthropic"
	"github.com/vibeteam/vibeteam/e2e/fakegemini"
	"github.com/vibeteam/vibeteam/e2e/fakeopenai"
)

// The agent CLIs the tier drives: the adapter (and binary) name, and the
// npm package and pinned version run.sh installs.
var agents = []struct{ name, pkg, version string }{
	{"claude", "@anthropic-ai/claude-code", "2.1.332"},
	{"codex", "@openai/codex", "0.171.0"},
	{"gemini", "@google/gemini-cli", "0.61.0"},
	{"opencode", "opencode-ai", "1.18.33"},
	{"claude-agent-acp", "@agentclientprotocol/claude-agent-acp", "0.101.0"},
	{"codex-acp", "@agentclientprotocol/codex-acp", "2.6.0"},
	{"qwen", "@qwen-code/qwen-code", "0.24.4"},
}

// testAPIKey is the key the tests give Claude Code (it never leaves the
// machine: the base URL is the fake server).
const testAPIKey = "sk-test-e2e-key-0123456789"

// runTimeout bounds one vibeteam invocation (VIBETEAM_E2E_RUN_TIMEOUT, a
// Go duration, overrides it).
var runTimeout = 120 * time.Second

var (
	vibeteamBin string            // built once by TestMain (or VIBETEAM_E2E_BIN)
	cacheDir    string            // VIBETEAM_E2E_CACHE
	agentBins   map[string]string // agent name -> its binary in the cache, when installed
	binDir      string            // the cache's node_modules/.bin
)

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	cacheDir = os.Getenv("VIBETEAM_E2E_CACHE")
	if cacheDir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			fmt.Fprintln(os.Stderr, "e2e: no home directory and no VIBETEAM_E2E_CACHE:", err)
			return 1
		}
		cacheDir = filepath.Join(home, ".cache", "vibeteam-e2e")
	}
	if v := os.Getenv("VIBETEAM_E2E_RUN_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			fmt.Fprintf(os.Stderr, "e2e: VIBETEAM_E2E_RUN_TIMEOUT=%q: want a positive duration such as 90s\n", v)
			return 2
		}
		runTimeout = d
	}
	binDir = filepath.Join(cacheDir, "node_modules", ".bin")
	agentBins = map[string]string{}
	var found []string
	for _, a := range agents {
		if p := filepath.Join(binDir, a.name); isExecutable(p) {
			agentBins[a.name] = p
			found = append(found, a.name)
		}
	}
	if bin := os.Getenv("VIBETEAM_E2E_BIN"); bin != "" {
		// A vibeteam built elsewhere (e.g. from another revision).
		vibeteamBin = bin
		fmt.Fprintf(os.Stderr, "e2e: vibeteam %s (VIBETEAM_E2E_BIN); agents installed: %v\n", bin, found)
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "vibeteam-e2e-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	vibeteamBin = filepath.Join(dir, "vibeteam")
	args := []string{"build", "-o", vibeteamBin}
	if raceEnabled {
		// The tests run under -race: so does vibeteam (a race exits 66).
		args = append(args, "-race")
	}
	start := time.Now()
	build := exec.Command("go", append(args, "..")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: go build of vibeteam failed:", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "e2e: built vibeteam (race=%v) in %s; agents installed in %s: %v\n", raceEnabled, time.Since(start).Round(time.Millisecond), binDir, found)
	return m.Run()
}

// worldRoot makes a test's world directory outside the system's temporary
// directory: Codex refuses to make its sandbox helper (codex-linux-sandbox)
// while CODEX_HOME is under it, and then every command it runs fails with
// "bwrap: execvp codex-linux-sandbox" on a machine with bubblewrap. Agent
// homes live next to the agents' cache instead, and go when the test ends.
func worldRoot(t *testing.T) string {
	t.Helper()
	parent := filepath.Join(cacheDir, "worlds")
	if err := os.MkdirAll(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	root, err := os.MkdirTemp(parent, sanitizeName(t.Name())+"-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	return root
}

// sanitizeName keeps a test name usable as one path element.
func sanitizeName(name string) string {
	b := []byte(name)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	if len(b) > 60 {
		b = b[:60]
	}
	return string(b)
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// needAgent skips the test when the agent CLI is not installed in the
// cache.
func needAgent(t *testing.T, name string) {
	t.Helper()
	if agentBins[name] != "" {
		return
	}
	for _, a := range agents {
		if a.name == name {
			t.Skipf("%s not installed in %s: run e2e/run.sh, or npm install --prefix %q %s@%s", name, cacheDir, cacheDir, a.pkg, a.version)
		}
	}
	t.Fatalf("unknown agent %q", name)
}

func needClaude(t *testing.T)   { t.Helper(); needAgent(t, "claude") }
func needCodex(t *testing.T)    { t.Helper(); needAgent(t, "codex") }
func needGemini(t *testing.T)   { t.Helper(); needAgent(t, "gemini") }
func needOpencode(t *testing.T) { t.Helper(); needAgent(t, "opencode") }

// world is one test's temporary machine: a HOME (and for Codex a
// CODEX_HOME) for the agent, a git project, a fake model server and a
// workflow file. Everything lives under root, a fresh temporary directory.
type world struct {
	t       *testing.T
	agent   string // the adapter the workflows use: claude, codex, gemini, opencode
	root    string
	home    string
	project string
	env     []string // the agent's own variables (config dirs, fake server, key)
	// dir is where vibeteam starts (default: the project), with PWD set to
	// it as a shell would.
	dir string
	// timeout, when set, bounds each run instead of runTimeout (agents
	// that start slowly on a loaded machine: opencode, qwen over ACP).
	timeout time.Duration

	server *fakeanthropic.Server // claude
	openai *fakeopenai.Server    // codex, opencode
	gemini *fakegemini.Server    // gemini

	mu   sync.Mutex
	runs []*result // every vibeteam run, for the failure dump
}

type worldOptions struct {
	script fakeanthropic.Script // default fakeanthropic.CreateFile()
	// approveKey pre-approves the API key in .claude.json, so Claude Code
	// does not ask whether to use it.
	approveKey bool
}

func newWorld(t *testing.T, o worldOptions) *world {
	t.Helper()
	return newWorldIn(t, worldRoot(t), o)
}

// newWorldIn builds the world in root (which the test made, to know paths
// before the script is written).
func newWorldIn(t *testing.T, root string, o worldOptions) *world {
	t.Helper()
	needClaude(t)
	w := newBareWorld(t, "claude", root)
	if o.script == nil {
		o.script = fakeanthropic.CreateFile()
	}
	w.server = fakeanthropic.New(t, o.script)
	w.env = []string{
		"ANTHROPIC_BASE_URL=" + w.server.URL(),
		"ANTHROPIC_API_KEY=" + testAPIKey,
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_TELEMETRY=1",
		"DISABLE_AUTOUPDATER=1",
	}

	// Onboarding done (otherwise the first screen is "Unable to connect to
	// Anthropic services"); the project is NOT trusted, so the trust dialog
	// shows.
	cfg := map[string]any{"hasCompletedOnboarding": true}
	if o.approveKey {
		cfg["customApiKeyResponses"] = map[string]any{"approved": []string{testAPIKey[len(testAPIKey)-20:]}, "rejected": []string{}}
	}
	b, _ := json.MarshalIndent(cfg, "", "  ")
	w.write(filepath.Join(w.home, ".claude.json"), string(b))
	return w
}

// newBareWorld makes root's HOME and git project, and arranges the dump on
// failure; the caller adds the agent's config and fake server.
func newBareWorld(t *testing.T, agent, root string) *world {
	t.Helper()
	w := &world{t: t, agent: agent, root: root, home: filepath.Join(root, "home"), project: filepath.Join(root, "project")}
	w.write(filepath.Join(w.project, "README.md"), "# e2e project\n")
	w.git("init", "-q")
	w.git("add", "README.md")
	w.git("-c", "user.name=e2e", "-c", "user.email=e2e@example.invalid", "commit", "-q", "-m", "init")
	t.Cleanup(w.dumpOnFailure)
	return w
}

// newCodexWorld is a world for the Codex CLI: a fresh, empty CODEX_HOME
// (so the first-run screens show every time) whose config.toml points a
// custom provider at a fake Responses server running script (default
// fakeopenai.CreateFile(false)).
func newCodexWorld(t *testing.T, script fakeopenai.Script) *world {
	t.Helper()
	needCodex(t)
	w := newBareWorld(t, "codex", worldRoot(t))
	w.env = nil
	addCodex(w, script)
	return w
}

// addCodex gives the world codex: a fake OpenAI server running script
// (default CreateFile) and a CODEX_HOME whose config points at it.
func addCodex(w *world, script fakeopenai.Script) {
	w.t.Helper()
	if script == nil {
		script = fakeopenai.CreateFile(false)
	}
	w.openai = fakeopenai.New(w.t, script)
	codexHome := filepath.Join(w.root, "codex-home")
	// supports_websockets=false: otherwise Codex tries a websocket first.
	w.write(filepath.Join(codexHome, "config.toml"), fmt.Sprintf(`model = "gpt-fake"
model_provider = "fake"

[model_providers.fake]
name = "fake"
base_url = "%s/v1"
env_key = "OPENAI_API_KEY"
wire_api = "responses"
supports_websockets = false
`, w.openai.URL()))
	w.env = append(w.env, "CODEX_HOME="+codexHome, "OPENAI_API_KEY=sk-test-e2e")
}

// newOpencodeWorld is a world for opencode: a config (OPENCODE_CONFIG) with
// one OpenAI-compatible provider at a fake server running script (default:
// CreateFile through opencode's bash tool), and XDG directories of its own.
func newOpencodeWorld(t *testing.T, script fakeopenai.Script) *world {
	t.Helper()
	needOpencode(t)
	w := newBareWorld(t, "opencode", worldRoot(t))
	// opencode starts slowly on a loaded machine (a first frame after 45 s,
	// a trivial headless turn in 72 s, at load 13).
	w.timeout = slowAgentTimeout
	if script == nil {
		script = fakeopenai.Sequence(createTrigger, fakeopenai.DoneText, fakeopenai.OtherText, fakeopenai.Bash("touch "+createdFile))
	}
	w.openai = fakeopenai.New(t, script)
	cfg := filepath.Join(w.root, "opencode.json")
	w.write(cfg, fmt.Sprintf(`{"model":"fake/fake-model","provider":{"fake":{"npm":"@ai-sdk/openai-compatible",
"options":{"baseURL":"%s/v1","apiKey":"sk-test-e2e"},"models":{"fake-model":{"name":"Fake Model","tool_call":true}}}}}
`, w.openai.URL()))
	w.env = []string{"OPENCODE_CONFIG=" + cfg, "OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_AUTOUPDATE=1"}
	for _, x := range []string{"CONFIG", "DATA", "CACHE", "STATE"} {
		w.env = append(w.env, "XDG_"+x+"_HOME="+filepath.Join(w.root, "xdg", strings.ToLower(x)))
	}
	return w
}

// newGeminiWorld is a world for the Gemini CLI: API-key auth selected in
// HOME's settings, GOOGLE_GEMINI_BASE_URL at a fake Gemini server running
// script (default fakegemini.CreateFile()). The folder is not trusted up
// front (no GEMINI_CLI_TRUST_WORKSPACE): the adapter has to deal with that.
func newGeminiWorld(t *testing.T, script fakegemini.Script) *world {
	t.Helper()
	needGemini(t)
	w := newBareWorld(t, "gemini", worldRoot(t))
	if script == nil {
		script = fakegemini.CreateFile()
	}
	w.gemini = fakegemini.New(t, script)
	w.write(filepath.Join(w.home, ".gemini", "settings.json"), `{"security":{"auth":{"selectedType":"gemini-api-key"}}}`+"\n")
	w.env = []string{"GEMINI_API_KEY=test-e2e", "GOOGLE_GEMINI_BASE_URL=" + w.gemini.URL()}
	return w
}

func (w *world) write(path, content string) {
	w.t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		w.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) git(args ...string) {
	w.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = w.project
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+w.home)
	if out, err := cmd.CombinedOutput(); err != nil {
		w.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// The prompt of w.workflow: every fake's CreateFile script answers it by
// creating createdFile through the agent's shell tool.
const (
	createTrigger = "create the file"
	createdFile   = "e2e-created.txt"
	createPrompt  = "Please " + createTrigger + " " + createdFile + " in this project."
)

// workflow writes a workflow of one stage (outside the project) and
// returns its path: one task of the world's agent per id (default: one
// task "agent"), each asked to create the file. mode is "headless" or ""
// (interactive, the default).
func (w *world) workflow(mode string, ids ...string) string {
	w.t.Helper()
	return w.promptWorkflow(mode, createPrompt, ids...)
}

// promptWorkflow is workflow with another prompt (written as a YAML
// double-quoted string, so a template such as {{.v}} stays one).
func (w *world) promptWorkflow(mode, prompt string, ids ...string) string {
	w.t.Helper()
	if len(ids) == 0 {
		ids = []string{"agent"}
	}
	quoted, _ := json.Marshal(prompt)
	var b strings.Builder
	fmt.Fprintf(&b, "id: e2e-%s\ngoal: create a file through a real agent\nstages:\n  - id: only\n    tasks:\n", w.agent)
	for _, id := range ids {
		fmt.Fprintf(&b, "      - id: %s\n        name: %s\n        adapter: %s\n", id, strings.ToUpper(id[:1])+id[1:], w.agent)
		if mode != "" {
			fmt.Fprintf(&b, "        executionMode: %s\n", mode)
		}
		fmt.Fprintf(&b, "        timeout: %s\n", w.taskTimeout())
		fmt.Fprintf(&b, "        prompt: %s\n", quoted)
	}
	path := filepath.Join(w.root, "wf.yaml")
	w.write(path, b.String())
	return path
}

// slowAgentTimeout bounds a run of an agent that starts slowly under load;
// its tasks' own timeout leaves 20 s of it for vibeteam's end.
const slowAgentTimeout = 5 * time.Minute

// taskTimeout is the timeout of the world's tasks: 100s, or the world's
// longer bound less 20 s.
func (w *world) taskTimeout() string {
	if w.timeout > slowAgentTimeout-time.Second {
		return (w.timeout - 20*time.Second).String()
	}
	return "100s"
}

// environ is the environment of vibeteam (and so of the agent): the test's
// own, minus anything that could point the agent at a real account or a
// real config, plus the fake server.
func (w *world) environ() []string {
	// run.sh's VIBETEAM_SANDBOX (off by default: the agents reach fake
	// servers on loopback) goes through, though other VIBETEAM_ do not.
	var env []string
	if v := os.Getenv("VIBETEAM_SANDBOX"); v != "" {
		env = append(env, "VIBETEAM_SANDBOX="+v)
	}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(k, "ANTHROPIC_"), strings.HasPrefix(k, "CLAUDE_"), strings.HasPrefix(k, "VIBETEAM_"),
			strings.HasPrefix(k, "OPENAI_"), strings.HasPrefix(k, "CODEX_"), strings.HasPrefix(k, "GEMINI_"),
			strings.HasPrefix(k, "GOOGLE_"), strings.HasPrefix(k, "OPENCODE_"),
			strings.HasPrefix(k, "XDG_"), k == "HOME", k == "PATH", k == "PWD", k == "NO_COLOR", k == "IS_SANDBOX", k == "GORACE":
			continue
		}
		env = append(env, kv)
	}
	if raceEnabled {
		// A race build sleeps 1 s at exit by default; races still show (exit 66).
		env = append(env, "GORACE=atexit_sleep_ms=50")
	}
	env = append(env,
		"HOME="+w.home,
		"PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"),
	)
	return append(env, w.env...)
}

// result is one vibeteam run.
type result struct {
	args     []string
	code     int
	stdout   string
	stderr   string // for a run in a PTY: the terminal transcript, ANSI-stripped
	duration time.Duration
}

func (r *result) String() string {
	return fmt.Sprintf("vibeteam %s: exit %d after %s", strings.Join(r.args, " "), r.code, r.duration.Round(10*time.Millisecond))
}

func (w *world) addRun(r *result) {
	w.mu.Lock()
	w.runs = append(w.runs, r)
	w.mu.Unlock()
	if strings.Contains(r.stderr, "WARNING: DATA RACE") {
		w.t.Errorf("the race detector reported a data race in vibeteam (%s); see its stderr below", r)
	}
}

// command is vibeteam with args, in w.dir (default: the project), in the
// test's environment.
func (w *world) command(args ...string) *exec.Cmd {
	cmd := exec.Command(vibeteamBin, args...)
	cmd.Dir = w.project
	if w.dir != "" {
		cmd.Dir = w.dir
	}
	cmd.Env = append(w.environ(), "PWD="+cmd.Dir)
	return cmd
}

// runBound bounds one vibeteam invocation in the world: runTimeout, or the
// world's longer timeout.
func (w *world) runBound() time.Duration {
	return max(runTimeout, w.timeout)
}

// run runs vibeteam with no terminal at all: stdin is /dev/null and, in a
// session of its own, it has no controlling terminal (/dev/tty fails).
func (w *world) run(args ...string) *result {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), w.runBound())
	defer cancel()
	cmd := w.command(args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	r := &result{args: args}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		w.t.Fatalf("start vibeteam: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		w.t.Errorf("vibeteam %v still running after %s: stopping it", args, w.runBound())
		err = stopProcess(cmd, done)
	}
	r.duration = time.Since(start)
	r.code = exitCode(err)
	r.stdout, r.stderr = stdout.String(), stderr.String()
	w.addRun(r)
	w.t.Logf("%s", r)
	w.reapTasks()
	return r
}

// stopProcess ends a vibeteam that overran: SIGTERM (it then stops its
// tasks and saves the session), SIGKILL after 15 s.
func stopProcess(cmd *exec.Cmd, done <-chan error) error {
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-done:
		return err
	case <-time.After(15 * time.Second):
		_ = cmd.Process.Kill()
		return <-done
	}
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if st, ok := ee.Sys().(syscall.WaitStatus); ok && st.Signaled() {
			return 128 + int(st.Signal())
		}
		return ee.ExitCode()
	}
	return -1
}

// reapTasks fails the test if a task's process group, or any process of
// the world, outlived vibeteam, and kills it: vibeteam must stop what it
// started.
func (w *world) reapTasks() {
	w.t.Helper()
	for _, s := range w.sessionsQuiet() {
		recs := map[string]*taskRecord{}
		for id, rec := range s.Tasks {
			recs[id] = rec
		}
		for key, r := range s.Runs {
			if r.Task != nil {
				recs["step at "+key] = r.Task
			}
		}
		for id, rec := range recs {
			if rec.Pid <= 0 {
				continue
			}
			if pids, _ := runner.GroupMembers(rec.Pid); len(pids) > 0 {
				w.t.Errorf("task %s: process group %d still running after vibeteam exited (pids %v); killing it", id, rec.Pid, pids)
				_ = syscall.Kill(-rec.Pid, syscall.SIGKILL)
			}
		}
	}
	w.reapStrays()
}

// session is the part of .vibeteam/sessions/<id>.json the tests read.
type session struct {
	ID         string                 `json:"id"`
	Status     string                 `json:"status"`
	TaskStatus map[string]string      `json:"taskStatus"`
	Tasks      map[string]*taskRecord `json:"tasks"`
	Error      string                 `json:"error"`
	// The usage limit a limited session stopped on.
	Limit *struct {
		Adapter string     `json:"adapter"`
		ResetAt *time.Time `json:"resetAt"`
		Message string     `json:"message"`
	} `json:"limit"`
	// A grimoire's step runs by address.
	Runs map[string]struct {
		Status  string         `json:"status"`
		Summary string         `json:"summary"`
		Outputs map[string]any `json:"outputs"`
		Reason  string         `json:"reason"`
		// An agent step's task record.
		Task *taskRecord `json:"task"`
	} `json:"runs"`
}

type taskRecord struct {
	Mode     string   `json:"mode"`
	Argv     []string `json:"argv"`
	Pid      int      `json:"pid"`
	ExitCode *int     `json:"exitCode"`
	Reason   string   `json:"reason"`
	Error    string   `json:"error"`
	LogPath  string   `json:"logPath"`
	Excerpt  string   `json:"excerpt"`
	Attempts int      `json:"attempts"`
	// Agent is the agent's structured report (headless runs).
	Agent *struct {
		SessionID string `json:"session_id"`
		Result    string `json:"result"`
		IsError   bool   `json:"is_error"`
		Error     string `json:"error"`
		Turns     int    `json:"turns"`
		ToolCalls int    `json:"tool_calls"`
		Tokens    struct {
			Input  int64 `json:"input"`
			Output int64 `json:"output"`
		} `json:"tokens"`
		Denials []struct {
			Tool    string `json:"tool"`
			Message string `json:"message"`
		} `json:"denials"`
	} `json:"agent"`
}

func (w *world) sessionsQuiet() []*session {
	paths, _ := filepath.Glob(filepath.Join(w.project, ".vibeteam", "sessions", "*.json"))
	var out []*session
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		var s session
		if json.Unmarshal(b, &s) == nil {
			out = append(out, &s)
		}
	}
	return out
}

// only is the project's one session.
func (w *world) only() *session {
	w.t.Helper()
	ss := w.sessionsQuiet()
	if len(ss) != 1 {
		w.t.Fatalf("want 1 session in %s, found %d", filepath.Join(w.project, ".vibeteam", "sessions"), len(ss))
	}
	return ss[0]
}

// event is one line of .vibeteam/logs/<id>.jsonl.
type event map[string]any

func (e event) str(k string) string {
	if v, ok := e[k]; ok && v != nil {
		return fmt.Sprint(v)
	}
	return ""
}

func (w *world) events(id string) []event {
	w.t.Helper()
	f, err := os.Open(filepath.Join(w.project, ".vibeteam", "logs", id+".jsonl"))
	if err != nil {
		w.t.Errorf("event log: %v", err)
		return nil
	}
	defer f.Close()
	var out []event
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			w.t.Errorf("event log line %q: %v", sc.Text(), err)
			continue
		}
		out = append(out, e)
	}
	return out
}

func eventsOf(evs []event, typ string) []event {
	var out []event
	for _, e := range evs {
		if e.str("event") == typ {
			out = append(out, e)
		}
	}
	return out
}

// taskLog is .vibeteam/logs/<id>/<task>.log (or .raw.log with raw).
func (w *world) taskLog(id, task string, raw bool) string {
	name := task + ".log"
	if raw {
		name = task + ".raw.log"
	}
	b, _ := os.ReadFile(filepath.Join(w.project, ".vibeteam", "logs", id, name))
	return string(b)
}

// assertCreated checks the agent's tool call reached the project, and its
// result went back to the model.
func (w *world) assertCreated() {
	w.t.Helper()
	if _, err := os.Stat(filepath.Join(w.project, createdFile)); err != nil {
		w.t.Errorf("the agent did not create %s: %v", createdFile, err)
	}
	found := false
	switch w.agent {
	case "claude":
		for _, r := range w.server.MessageRequests() {
			if last, ok := r.Messages.LastUserBlock(); ok && last.Type == "tool_result" {
				found = true
				if last.IsError {
					w.t.Errorf("the tool call failed: %s", last.ResultText())
				}
			}
		}
	case "codex", "opencode", "qwen":
		for _, r := range w.openai.MainRequests() {
			if last, ok := r.Responses.Last(); ok && last.IsCallOutput() {
				found = true
				// Codex: "Process exited with code 0" when it ran; a
				// rejection otherwise.
				if out := last.OutputText(); w.agent == "codex" && !strings.Contains(out, "exited with code 0") {
					w.t.Errorf("the command did not run: %s", out)
				}
			}
		}
	case "gemini":
		for _, r := range w.gemini.MainRequests() {
			if last, ok := r.Generate.LastPart(); ok && last.FunctionResponse != nil {
				found = true
				if out := string(last.FunctionResponse.Response); strings.Contains(out, `"error"`) {
					w.t.Errorf("the command failed: %s", out)
				}
			}
		}
	}
	if !found {
		w.t.Errorf("the model never got the tool call's result")
	}
}

// modelSummary is the fake model server's traffic, one line per request.
func (w *world) modelSummary() string {
	switch {
	case w.server != nil:
		return w.server.Summary()
	case w.openai != nil:
		return w.openai.Summary()
	case w.gemini != nil:
		return w.gemini.Summary()
	}
	return ""
}

// promptsReceived is the text of every user turn the model's main loop
// received (each request's latest user message or part, in order).
func (w *world) promptsReceived() []received {
	var out []received
	switch w.agent {
	case "claude":
		for _, r := range w.server.MessageRequests() {
			if last, ok := r.Messages.LastUserBlock(); ok && last.Type == "text" && !fakeanthropic.IsSideRequest(r.Messages) {
				out = append(out, received{text: last.Text})
			}
		}
	case "codex", "opencode", "qwen":
		for _, r := range w.openai.MainRequests() {
			if last, ok := r.Responses.Last(); ok && last.IsUserMessage() {
				text := last.Text()
				if w.agent == "opencode" && strings.Contains(text, " ") && len(text) > 1 && text[0] == '"' && text[len(text)-1] == '"' {
					// opencode run joins its message arguments, quoting
					// each one that holds a space.
					text = strings.ReplaceAll(text[1:len(text)-1], `\"`, `"`)
				}
				out = append(out, received{at: r.Time, text: text})
			}
		}
	case "gemini":
		for _, r := range w.gemini.MainRequests() {
			if last, ok := r.Generate.LastPart(); ok && last.Text != "" {
				out = append(out, received{at: r.Time, text: last.Text})
			}
		}
	}
	return out
}

// received is one prompt the model got, and when (zero when the fake does
// not record it).
type received struct {
	at   time.Time
	text string
}

// assertDone checks the session completed with its tasks DONE (default:
// the one task "agent").
func (w *world) assertDone(s *session, ids ...string) {
	w.t.Helper()
	if len(ids) == 0 {
		ids = []string{"agent"}
	}
	if s.Status != "completed" {
		w.t.Errorf("session %s: status %q, want completed", s.ID, s.Status)
	}
	for _, id := range ids {
		if got := s.TaskStatus[id]; got != "DONE" {
			w.t.Errorf("session %s: task %s %q, want DONE", s.ID, id, got)
		}
	}
}

// dumpOnFailure (or VIBETEAM_E2E_DUMP=1) prints what is needed to see why: vibeteam's output, the
// model traffic, the events, the task logs and the agent's last screen.
func (w *world) dumpOnFailure() {
	if !w.t.Failed() && os.Getenv("VIBETEAM_E2E_DUMP") == "" {
		if testing.Verbose() {
			w.t.Logf("fake model server requests:\n%s", w.modelSummary())
		}
		return
	}
	t := w.t
	w.mu.Lock()
	runs := append([]*result(nil), w.runs...)
	w.mu.Unlock()
	for _, r := range runs {
		t.Logf("==== %s\n---- stdout\n%s\n---- stderr / terminal\n%s", r, clipTail(r.stdout, 8000), clipTail(r.stderr, 12000))
	}
	t.Logf("==== fake model server requests\n%s", w.modelSummary())
	for _, s := range w.sessionsQuiet() {
		sb, _ := json.MarshalIndent(map[string]any{"status": s.Status, "taskStatus": s.TaskStatus, "tasks": s.Tasks, "error": s.Error}, "", "  ")
		t.Logf("==== session %s\n%s", s.ID, sb)
		var lines []string
		lastState, repeats := "", 0
		flush := func() {
			if repeats > 0 {
				lines = append(lines, fmt.Sprintf("  … %d more state events for %s", repeats, lastState))
			}
			repeats = 0
		}
		for _, e := range w.events(s.ID) {
			typ := e.str("event")
			if typ == "task_output" {
				continue
			}
			// A spinner changes the screen several times a second: one line
			// per run of the same state.
			if typ == "state" {
				key := e.str("task") + " " + e.str("state")
				if key == lastState {
					repeats++
					continue
				}
				flush()
				lastState = key
			} else {
				flush()
				lastState = ""
			}
			b, _ := json.Marshal(e)
			lines = append(lines, clip(string(b), 400))
		}
		flush()
		t.Logf("==== events (without task_output)\n%s", strings.Join(lines, "\n"))
		for task := range s.Tasks {
			t.Logf("==== task log %s (tail)\n%s", task, clipTail(w.taskLog(s.ID, task, false), 6000))
			if raw := w.taskLog(s.ID, task, true); raw != "" {
				t.Logf("==== %s.raw.log: %d bytes; last screen (120x40):\n%s", task, len(raw), runner.RenderScreen([]byte(raw), 120, 40))
			}
		}
	}
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

func clipTail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// ansi matches escape sequences: CSI, OSC (BEL or ST ended), and two-byte
// escapes.
var ansi = regexp.MustCompile(`\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_()][0-9A-Za-z]?`)

func stripANSI(s string) string { return ansi.ReplaceAllString(s, "") }

// ttySession is vibeteam running in a pseudo-terminal that is its
// controlling terminal, as for a person at a terminal.
type ttySession struct {
	t     *testing.T
	cmd   *exec.Cmd
	ptmx  *os.File
	start time.Time

	mu      sync.Mutex
	out     bytes.Buffer
	changed chan struct{} // pinged on output
	readEnd chan struct{}
	exited  chan struct{}
	err     error
	quitAt  int // where a SIGQUIT goroutine dump starts in text(); 0: none
}

// startTTY starts vibeteam with args in a new 120x40 PTY; the PTY becomes
// its controlling terminal (Setsid+Setctty), so /dev/tty is the PTY.
func (w *world) startTTY(args ...string) *ttySession {
	w.t.Helper()
	cmd := w.command(args...)
	cmd.Env = append(cmd.Env, "TERM=xterm-256color")
	ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Cols: 120, Rows: 40})
	if err != nil {
		w.t.Fatalf("start vibeteam in a pty: %v", err)
	}
	s := &ttySession{t: w.t, cmd: cmd, ptmx: ptmx, start: time.Now(),
		changed: make(chan struct{}, 1), readEnd: make(chan struct{}), exited: make(chan struct{})}
	go func() {
		defer close(s.readEnd)
		buf := make([]byte, 32<<10)
		for {
			n, err := ptmx.Read(buf)
			if n > 0 {
				s.mu.Lock()
				s.out.Write(buf[:n])
				s.mu.Unlock()
				select {
				case s.changed <- struct{}{}:
				default:
				}
			}
			if err != nil {
				return // EIO once vibeteam (the last holder of the slave) is gone
			}
		}
	}()
	go func() {
		s.err = cmd.Wait()
		close(s.exited)
	}()
	// If the test ends early (t.Fatal), vibeteam must not outlive it.
	w.t.Cleanup(func() {
		if !s.hasExited() {
			_ = cmd.Process.Kill()
			<-s.exited
			w.reapTasks()
		}
		_ = ptmx.Close()
	})
	return s
}

// text is everything vibeteam wrote so far, ANSI-stripped, with the
// terminal's CR LF line ends as LF.
func (s *ttySession) text() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.ReplaceAll(stripANSI(s.out.String()), "\r\n", "\n")
}

func (s *ttySession) send(keys string) {
	if _, err := s.ptmx.Write([]byte(keys)); err != nil {
		s.t.Errorf("type %q: %v", keys, err)
	}
}

func (s *ttySession) hasExited() bool {
	select {
	case <-s.exited:
		return true
	default:
		return false
	}
}

// goroutines makes a stuck vibeteam print its goroutines (SIGQUIT; Go
// prints them on stderr, the PTY, and exits 2) and returns that text.
func (s *ttySession) goroutines() string {
	before := len(s.text())
	s.quitAt = before
	_ = s.cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-s.exited:
	case <-time.After(5 * time.Second):
	}
	select {
	case <-s.readEnd:
	case <-time.After(2 * time.Second):
	}
	text := s.text()
	if len(text) < before {
		return ""
	}
	// Only the goroutines that run vibeteam's code.
	var keep []string
	for _, g := range strings.Split(text[before:], "\n\n") {
		if strings.Contains(g, "github.com/vibeteam/") {
			keep = append(keep, strings.TrimSpace(g))
		}
	}
	return clip(strings.Join(keep, "\n\n"), 20000)
}

// finish ends the session: it returns when vibeteam exits, or stops it at
// the deadline.
func (s *ttySession) finish(w *world, args []string) *result {
	var err error
	select {
	case <-s.exited:
	case <-time.After(time.Until(s.start.Add(w.runBound()))):
		s.t.Errorf("vibeteam %v still running after %s: stopping it", args, w.runBound())
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(15 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.exited
		}
	}
	err = s.err
	select {
	case <-s.readEnd:
	case <-time.After(5 * time.Second):
		s.t.Errorf("the PTY stayed open 5 s after vibeteam exited (a child still holds it)")
	}
	_ = s.ptmx.Close()
	text := s.text()
	if s.quitAt > 0 && s.quitAt <= len(text) {
		text = text[:s.quitAt] + "\n[goroutine dump cut: see above]\n"
	}
	r := &result{args: args, code: exitCode(err), stderr: text, duration: time.Since(s.start)}
	w.addRun(r)
	s.t.Logf("%s", r)
	w.reapTasks()
	return r
}

// pause is one question vibeteam asked at the terminal.
type pause struct {
	task  string // the task's display name
	state string // e.g. interaction_trust
	panel string // from "… needs you" to the reply prompt
}

const replyPrompt = "reply › "

// answerPauses reads vibeteam's terminal until it exits (or runTimeout
// after the start) and, each time a reply prompt appears, types what
// decide says for the panel above it. A positive after bounds the wait
// further: it returns that long after the first answer.
func (s *ttySession) answerPauses(decide func(pause) string, after time.Duration) {
	prompts := 0
	deadline := time.After(time.Until(s.start.Add(runTimeout)))
	var afterFirst <-chan time.Time
	for {
		select {
		case <-s.exited:
			return
		case <-deadline:
			return
		case <-afterFirst:
			return
		case <-s.changed:
		}
		text := s.text()
		for n := strings.Count(text, replyPrompt); prompts < n; prompts++ {
			if after > 0 && afterFirst == nil {
				afterFirst = time.After(after)
			}
			panel := text[:nthIndex(text, replyPrompt, prompts)]
			i := strings.LastIndex(panel, "needs you")
			if i < 0 {
				s.t.Errorf("a reply prompt without a \"needs you\" panel above it:\n%s", clipTail(panel, 2000))
				s.send(":quit\r")
				continue
			}
			if j := strings.LastIndex(panel[:i], "──"); j >= 0 {
				i = j
			}
			p := parsePanel(panel[i:])
			s.send(decide(p))
		}
	}
}

// parsePanel reads "── NAME (ADAPTER) needs you: STATE ──" and the lines
// after it.
func parsePanel(panel string) pause {
	p := pause{panel: panel}
	line, _, _ := strings.Cut(panel, "\n")
	before, after, _ := strings.Cut(line, "needs you:")
	before = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(before), "──"))
	if k := strings.LastIndex(before, " ("); k >= 0 {
		before = before[:k]
	}
	p.task = before
	p.state, _, _ = strings.Cut(strings.TrimSpace(after), " ")
	return p
}

// nthIndex is the index of the n-th (0-based) occurrence of sub in s.
func nthIndex(s, sub string, n int) int {
	off := 0
	for ; ; n-- {
		i := strings.Index(s[off:], sub)
		if i < 0 {
			return -1
		}
		if n == 0 {
			return off + i
		}
		off += i + len(sub)
	}
}

// taskDoneAt is when the event log says task became DONE.
func (w *world) taskDoneAt(s *session, task string) (time.Time, bool) {
	w.t.Helper()
	for _, e := range eventsOf(w.events(s.ID), "task_status") {
		if e.str("task") == task && e.str("status") == "DONE" {
			at, err := time.Parse(time.RFC3339Nano, e.str("time"))
			if err != nil {
				w.t.Errorf("task_status event with a bad time: %v", e)
			}
			return at, true
		}
	}
	return time.Time{}, false
}

// assertPromptBeforeDone checks that the model's main loop received
// prompt as a user turn (exactly, up to surrounding space), and, where the
// fake records when, before the task was DONE: a task must not finish
// before the agent has even sent its prompt to the model.
func (w *world) assertPromptBeforeDone(s *session, task, prompt string) {
	w.t.Helper()
	got := w.promptsReceived()
	var texts []string
	for _, r := range got {
		texts = append(texts, r.text)
		if strings.TrimSpace(r.text) != prompt {
			continue
		}
		if r.at.IsZero() {
			return
		}
		if done, ok := w.taskDoneAt(s, task); ok && !r.at.Before(done) {
			w.t.Errorf("task %s was DONE at %s, before the model received its prompt (at %s)",
				task, done.Format("15:04:05.000"), r.at.Format("15:04:05.000"))
		}
		return
	}
	w.t.Errorf("the model never received the prompt %q as a user turn; it received %q", prompt, texts)
}

// autoAnswered is the states the auto-policy answered (auto_action events).
func (w *world) autoAnswered(s *session) map[string]int {
	w.t.Helper()
	out := map[string]int{}
	for _, e := range eventsOf(w.events(s.ID), "auto_action") {
		out[e.str("state")]++
	}
	return out
}

// logShows reports whether a task log shows text, whitespace aside: a TUI
// may place each word with a cursor move instead of writing the spaces, and
// the ANSI-stripped log then runs the words together.
func logShows(log, text string) bool {
	squeeze := func(s string) string { return strings.Join(strings.Fields(s), "") }
	return strings.Contains(squeeze(log), squeeze(text))
}

// assertReport checks a headless task's structured report: the agent's
// session id, its final message, at least one tool call, tokens, and the
// agent.* events of a tool call.
func (w *world) assertReport(s *session, task, result string) {
	w.t.Helper()
	rec := s.Tasks[task]
	if rec == nil || rec.Agent == nil {
		w.t.Fatalf("task %s has no agent report: %+v", task, rec)
	}
	if a := rec.Agent; a.SessionID == "" || a.Result != result || a.ToolCalls < 1 || a.Tokens.Input == 0 || a.IsError {
		w.t.Errorf("task %s's report: %+v", task, *a)
	}
	kinds := map[string]int{}
	for _, e := range w.events(s.ID) {
		kinds[e.str("event")]++
	}
	for _, k := range []string{"agent.init", "agent.tool_call", "agent.tool_result", "agent.usage"} {
		if kinds[k] == 0 {
			w.t.Errorf("no %s event", k)
		}
	}
}
