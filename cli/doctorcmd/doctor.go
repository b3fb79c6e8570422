// Package doctorcmd is `vibeteam doctor`: whether the agent CLIs the
// adapters run are installed, at the tested version, with their
// credentials, MCP servers and ACP commands, and whether the sandbox works.
package doctorcmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/vibeteam/vibeteam/adapters"
	"github.com/vibeteam/vibeteam/cli/cmdutil"
	"github.com/vibeteam/vibeteam/core/acp"
	"github.com/vibeteam/vibeteam/core/workflow"
)

// defaultVersionTimeout bounds each `COMMAND --version` doctor runs.
const defaultVersionTimeout = 10 * time.Second

// Options are what `vibeteam doctor` is asked.
type Options struct {
	IO      cmdutil.IO
	Base    string   // the project's base dir
	Args    []string // FILE|NAME, or none for every adapter
	JSON    bool     // --json
	Timeout time.Duration
}

// NewCmdDoctor is the `doctor` command. Its action gathers the Options and
// hands them to runF (nil: Run).
func NewCmdDoctor(streams cmdutil.IO, runF func(*Options) error) *ucli.Command {
	if runF == nil {
		runF = Run
	}
	return &ucli.Command{
		Name:      "doctor",
		Usage:     "check the agent CLIs: on PATH, their version against the tested one, their auth environment (every adapter, or those FILE|NAME uses)",
		ArgsUsage: "[FILE|NAME]",
		Description: `For every adapter (built-in and .vibeteam/adapters/*.yaml), or with
FILE|NAME only for those that workflow or grimoire uses (its tasks'
adapters; its agent steps', claude by default), doctor reports:

  command  whether the command is on PATH (a command written as a path:
           whether it is an executable file, relative to the base dir),
           and where;
  version  the first line of what "COMMAND --version" prints (an adapter
           file's version.args; run with no stdin, in an empty temporary
           directory, for at most 10s), and whether it is the version the
           adapter was tested with (version.tested; the built-in ones are
           pinned by the e2e tests): "ok", or "differs: tested X". An
           adapter without a version key (shell) is only looked up;
  auth     which of the environment variables the adapter names for its
           credentials (auth.env) are set: names only, never values. None
           set is a warning, not an error, since the CLIs also keep logins
           of their own (auth.note says how);
  mcp      with FILE|NAME: the MCP servers it gives that adapter's agents,
           and whether each command is there (on PATH, or an executable
           file relative to the base dir);
  next     the next major version of the adapter's CLI, when it ships as
           a binary of its own and is on PATH (opencode2, of @opencode/cli):
           where, its version, and that it is not tested (the adapter
           runs its own command);
  sandbox  (after the adapters, not in --json) bwrap and its version,
           whether user namespaces are usable, whether sandboxed
           processes share the session's network namespace (as root)
           or each start a bridge, and a trial run of a sandboxed
           command;
  acp      an adapter with an acp mode: its ACP command is started and
           asked "initialize" (the Agent Client Protocol's handshake, in
           the base dir, for at most the version timeout), and the agent's
           protocol version and capabilities are shown (loadSession, the
           MCP transports it takes). An ACP command not installed is only
           noted, with how to install it (the acp mode is one way to run
           the adapter), unless FILE|NAME runs the adapter in acp mode:
           then it is a problem;

FILE|NAME is found and loaded as run finds it: a file,
.vibeteam/workflows/NAME.*, .vibeteam/grimoires/NAME.yaml, or a built-in.
Only what doctor needs is checked: use validate for the rest.

Each line is marked ✓ (fine), ✗ (a problem) or ! (a warning).

--json prints one JSON array instead, an object per adapter:
  {"adapter", "source", "command", "path", "found", "version", "tested",
   "versionOk", "authEnv": {"set": [...], "missing": [...]}, "authNote",
   "mcp": [{"name", "command", "path", "found"}] (with FILE|NAME),
   "acp": {"command", "path", "protocol", "agent", "loadSession", "mcp",
   "error"} (an adapter with an acp mode), "next": {"command",
   "package", "path", "version", "tested"} (the CLI's next major version,
   when its own binary is on PATH: opencode2), "problems": [...],
   "warnings": [...]}
versionOk is null when there is nothing to compare.

Exit status: 1 when FILE|NAME was given and an adapter it needs is not on
PATH (or, for its acp tasks, the adapter's ACP command) or its file is broken, or an MCP server's command is missing; 2 when FILE|NAME cannot be loaded (its problems
as file:line:col, as validate prints them); 0 otherwise. Without FILE|NAME
a missing CLI is only reported.`,
		Flags: []ucli.Flag{
			cmdutil.BaseDirFlag,
			&ucli.BoolFlag{Name: "json", Usage: "print a JSON array, an object per adapter (see above)"},
			&ucli.DurationFlag{Name: "timeout", Value: defaultVersionTimeout, Usage: "how long each version command may run", Hidden: true},
		},
		Action: func(c *ucli.Context) error {
			if c.NArg() > 1 {
				return cmdutil.Exitf(cmdutil.ExitUsage, "doctor takes at most one workflow file or name, got %d arguments; see vibeteam doctor --help", c.NArg())
			}
			base, err := cmdutil.BaseDir(c)
			if err != nil {
				return err
			}
			return runF(&Options{IO: streams, Base: base, Args: c.Args().Slice(), JSON: c.Bool("json"), Timeout: c.Duration("timeout")})
		},
	}
}

// Run checks the adapters (those the workflow opts.Args names uses, when
// given) and prints
// what it found.
func Run(opts *Options) error {
	reg, err := cmdutil.LoadRegistry(opts.Base)
	if err != nil {
		return err
	}
	var def *workflow.Definition
	if len(opts.Args) == 1 {
		// Only the adapters' names are checked by the loader: a broken
		// adapter file is doctor's finding (exit 1), and whether a
		// command is installed is doctor's question.
		def, err = cmdutil.LoadDefinition(opts.Args[0], opts.Base, workflow.LoadOptions{Adapters: doctorAdapterSet{reg}})
		if err != nil {
			return err
		}
	}
	reports := diagnose(reg, opts.Base, def, opts.Timeout)
	if opts.JSON {
		enc := json.NewEncoder(opts.IO.Out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(reports); err != nil {
			return err
		}
	} else {
		printDoctor(opts.IO.Out, def, reports)
		printSandboxDoctor(opts.IO.Out, opts.Timeout)
	}
	if def == nil {
		return nil
	}
	if missing := missingFor(reports); len(missing) > 0 {
		return cmdutil.Exitf(cmdutil.ExitFailed, "%s cannot run here: %s", def.Source, strings.Join(missing, "; "))
	}
	return nil
}

// missingFor is what the workflow needs and this machine lacks: an
// adapter's CLI, a broken adapter file, an MCP server's command.
func missingFor(reports []*doctorReport) []string {
	var missing []string
	for _, r := range reports {
		switch {
		case r.broken:
			missing = append(missing, fmt.Sprintf("adapter %s: its file is broken", r.Adapter))
		case !r.Found, r.acpNeeded && r.ACP != nil && r.ACP.Path == "":
			missing = append(missing, fmt.Sprintf("adapter %s: %s", r.Adapter, strings.Join(r.Problems, "; ")))
		default:
			for _, m := range r.MCP {
				if !m.Found {
					missing = append(missing, fmt.Sprintf("MCP server %s (of %s's agents): %s", m.Name, r.Adapter, m.Command))
				}
			}
		}
	}
	return missing
}

// doctorAdapterSet is the registry as the loader sees it for doctor: a name
// whose adapter file is broken counts as known. It is no ModeSet nor
// CommandSet, so that only the names are checked.
type doctorAdapterSet struct{ reg *adapters.Registry }

func (s doctorAdapterSet) Has(name string) bool {
	return s.reg.Has(name) || s.reg.Broken(name) != nil
}

func (s doctorAdapterSet) Names() []string { return s.reg.Names() }

// doctorReport is what doctor found about one adapter: one object of
// --json, one block of the text report.
type doctorReport struct {
	Adapter   string `json:"adapter"`
	Source    string `json:"source"`
	Command   string `json:"command"`
	Path      string `json:"path"`  // where the command was found; "" when it was not
	Found     bool   `json:"found"` // on PATH, or an executable file
	Version   string `json:"version"`
	Tested    string `json:"tested"`
	VersionOK *bool  `json:"versionOk"` // nil: nothing to compare
	// Relation is "newer" or "older" when the version differs from the
	// tested one and both are version numbers.
	Relation string     `json:"relation,omitempty"`
	AuthEnv  doctorAuth `json:"authEnv"`
	AuthNote string     `json:"authNote"`
	// MCP are the MCP servers FILE gives this adapter's agents, each
	// command looked up as the agent CLI will start it.
	MCP []doctorMCP `json:"mcp,omitempty"`
	// ACP is the adapter's acp mode's handshake; nil without one.
	ACP *doctorACP `json:"acp,omitempty"`
	// Next is the next major version of the adapter's CLI, found on PATH
	// under a binary of its own (opencode2); nil when it is not there.
	Next     *doctorNext `json:"next,omitempty"`
	Problems []string    `json:"problems"`
	Warnings []string    `json:"warnings"`
	lines    []reportRow // the text report's lines under the adapter's name
	broken   bool        // its adapter file could not be loaded
	// acpNeeded: FILE runs the adapter in acp mode, so a missing ACP
	// command is a problem, not a note.
	acpNeeded bool
}

// doctorMCP is one MCP server and whether its command is there.
type doctorMCP struct {
	Name    string `json:"name"`
	Command string `json:"command"`
	Path    string `json:"path"`
	Found   bool   `json:"found"`
}

// doctorACP is an adapter's ACP agent, as its initialize answer shows it.
type doctorACP struct {
	Command     string   `json:"command"`
	Path        string   `json:"path"` // "" when it is not installed
	Protocol    int      `json:"protocol,omitempty"`
	Agent       string   `json:"agent,omitempty"` // its name and version, as it says them
	LoadSession bool     `json:"loadSession"`
	MCP         []string `json:"mcp,omitempty"` // the MCP transports it takes
	Error       string   `json:"error,omitempty"`
}

// doctorNext is a next major version of an adapter's CLI, installed beside
// it under another name.
type doctorNext struct {
	Command string `json:"command"`
	Package string `json:"package"`
	Path    string `json:"path"`
	Version string `json:"version,omitempty"`
	Tested  bool   `json:"tested"` // whether an adapter was tested with it
}

// nextMajors are the next major versions of the built-in adapters' CLIs
// that ship as binaries of their own, by the adapter's command: none is
// tested yet, and the adapter keeps running its own command.
var nextMajors = map[string]struct{ command, pkg string }{
	// opencode v2 is another npm package with an opencode2 binary.
	"opencode": {"opencode2", "@opencode/cli"},
}

// checkNext names the next major version of r's CLI when it is on PATH,
// its version, and that it is not tested.
func checkNext(r *doctorReport, base string, timeout time.Duration) {
	next, ok := nextMajors[r.Command]
	if !ok {
		return
	}
	path, err := lookCommand(next.command, base)
	if err != nil {
		return
	}
	r.Next = &doctorNext{Command: next.command, Package: next.pkg, Path: path}
	what := path
	if line, err := adapters.AskVersion(path, []string{"--version"}, timeout); err == nil {
		r.Next.Version = line
		what += " (" + line + ")"
	}
	tested := ""
	if r.Tested != "" {
		tested = ", tested " + r.Tested
	}
	r.add(markNone, "next", "%s %s: %s is installed, not tested: this adapter runs %s%s", next.command, what, next.pkg, r.Command, tested)
}

// checkACP asks the ACP agent of r's adapter, when it has an acp mode,
// for the protocol's handshake.
func checkACP(r *doctorReport, reg *adapters.Registry, base string, timeout time.Duration) {
	if !reg.HasMode(r.Adapter, string(adapters.ACP)) {
		return
	}
	a, err := reg.New(r.Adapter, adapters.Options{})
	if err != nil {
		return
	}
	lc, err := a.LaunchConfig(adapters.ACP, "", nil)
	if err != nil {
		r.warn("acp", err.Error())
		return
	}
	r.ACP = &doctorACP{Command: lc.Command}
	path, err := lookCommand(lc.Command, base)
	if err != nil {
		msg := err.Error() + ": acp mode not checked"
		if r.acpNeeded {
			msg = err.Error() + ": the acp tasks cannot start"
		}
		if install, ok := cmdutil.InstallCommands[lc.Command]; ok {
			msg += "; install it: " + install
		}
		if r.acpNeeded {
			r.problem("acp", msg)
		} else {
			r.add(markNone, "acp", "%s", msg)
		}
		return
	}
	r.ACP.Path = path
	argv := strings.Join(append([]string{lc.Command}, lc.Args...), " ")
	info, err := acp.Handshake(context.Background(), r.Adapter+" ("+argv+")", path, lc.Args, lc.Env, base, timeout)
	if err != nil {
		r.ACP.Error = err.Error()
		r.warn("acp", err.Error())
		return
	}
	caps := info.AgentCapabilities
	r.ACP.Protocol, r.ACP.Agent, r.ACP.LoadSession = info.ProtocolVersion, info.Name(), caps.LoadSession
	r.ACP.MCP = []string{"stdio"}
	if caps.MCPCapabilities.HTTP {
		r.ACP.MCP = append(r.ACP.MCP, "http")
	}
	if caps.MCPCapabilities.SSE {
		r.ACP.MCP = append(r.ACP.MCP, "sse")
	}
	r.add(markOK, "acp", "%s: %s", argv, info.Describe())
}

// doctorAuth are the names of auth.env that are set (not empty) and those
// that are not. Never values.
type doctorAuth struct {
	Set     []string `json:"set"`
	Missing []string `json:"missing"`
}

// reportRow is one line of an adapter's block in the text report.
type reportRow struct {
	mark  string // "✓", "✗", "!" or " "
	label string
	text  string
}

const (
	markOK   = "✓"
	markBad  = "✗"
	markWarn = "!"
	markNone = " "
)

func (r *doctorReport) add(mark, label, format string, args ...any) {
	r.lines = append(r.lines, reportRow{mark, label, fmt.Sprintf(format, args...)})
}

func (r *doctorReport) problem(label, msg string) {
	r.Problems = append(r.Problems, msg)
	r.add(markBad, label, "%s", msg)
}

func (r *doctorReport) warn(label, msg string) {
	r.Warnings = append(r.Warnings, msg)
	r.add(markWarn, label, "%s", msg)
}

// diagnose checks every adapter, or those def uses, in parallel (each
// version command may take up to timeout), and returns the reports by name.
func diagnose(reg *adapters.Registry, base string, def *workflow.Definition, timeout time.Duration) []*doctorReport {
	reports := []*doctorReport{} // [] in --json when FILE uses no adapter
	infos := reg.Info()
	broken := reg.BrokenFiles()
	if def == nil {
		for _, i := range infos {
			reports = append(reports, &doctorReport{Adapter: i.Name})
		}
		for _, b := range broken {
			reports = append(reports, brokenReport(b))
		}
	} else {
		servers, overACP := mcpUsed(def), acpUsed(def)
		for _, name := range adaptersUsed(def) {
			r := &doctorReport{Adapter: name, acpNeeded: overACP[name]}
			for _, s := range servers[name] {
				r.MCP = append(r.MCP, doctorMCP{Name: s.Name, Command: s.Command})
			}
			reports = append(reports, r)
		}
	}
	var wg sync.WaitGroup
	for i, r := range reports {
		if r.broken {
			continue
		}
		if at := slices.IndexFunc(infos, func(in adapters.Info) bool { return in.Name == r.Adapter }); at >= 0 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				checkAdapter(r, infos[at], base, timeout)
				checkNext(r, base, timeout)
				checkACP(r, reg, base, timeout)
			}()
			continue
		}
		// Not registered: the loader let only broken ones through.
		at := slices.IndexFunc(broken, func(b adapters.BrokenFile) bool { return b.Name == r.Adapter })
		if at < 0 {
			reports[i] = &doctorReport{Adapter: r.Adapter, broken: true}
			reports[i].problem("adapter", fmt.Sprintf("unknown adapter %q", r.Adapter))
			continue
		}
		reports[i] = brokenReport(broken[at])
	}
	wg.Wait()
	for _, r := range reports {
		// [] rather than null in --json.
		r.Problems = nonNil(r.Problems)
		r.Warnings = nonNil(r.Warnings)
		r.AuthEnv.Set = nonNil(r.AuthEnv.Set)
		r.AuthEnv.Missing = nonNil(r.AuthEnv.Missing)
	}
	slices.SortStableFunc(reports, func(a, b *doctorReport) int { return strings.Compare(a.Adapter, b.Adapter) })
	return reports
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// adaptersUsed are the adapters the tasks and agent steps of def run,
// sorted, each once.
func adaptersUsed(def *workflow.Definition) []string {
	var names []string
	eachAgent(def, func(adapter, _ string, _ []workflow.MCPServer) { names = append(names, adapter) })
	slices.Sort(names)
	names = slices.Compact(names)
	return slices.DeleteFunc(names, func(n string) bool { return n == "" })
}

// mcpUsed are the MCP servers def gives the agents of each adapter (the
// workflow's, and each task's or step's own), each name once per adapter.
func mcpUsed(def *workflow.Definition) map[string][]workflow.MCPServer {
	out := map[string][]workflow.MCPServer{}
	eachAgent(def, func(adapter, _ string, servers []workflow.MCPServer) {
		for _, s := range servers {
			if !slices.ContainsFunc(out[adapter], func(o workflow.MCPServer) bool { return o.Name == s.Name && o.Command == s.Command }) {
				out[adapter] = append(out[adapter], s)
			}
		}
	})
	return out
}

// eachAgent calls fn for every task and agent step of def with the adapter
// it runs (an agent step's default included) and the MCP servers it gets.
func eachAgent(def *workflow.Definition, fn func(adapter, mode string, mcp []workflow.MCPServer)) {
	for s := range def.AllSteps() {
		for _, t := range s.Tasks {
			fn(t.Adapter, t.ExecutionMode, workflow.MergeMCP(def.MCP, t.MCP))
		}
		if s.Agent != nil {
			a := s.Agent.Adapter
			if a == "" {
				a = workflow.DefaultAgentAdapter
			}
			fn(a, s.Agent.ExecutionMode, workflow.MergeMCP(def.MCP, s.Agent.MCP))
		}
	}
}

// acpUsed are the adapters def runs in acp mode: their ACP command must be
// installed, not only noted.
func acpUsed(def *workflow.Definition) map[string]bool {
	out := map[string]bool{}
	eachAgent(def, func(adapter, mode string, _ []workflow.MCPServer) {
		if mode == workflow.ModeACP {
			out[adapter] = true
		}
	})
	return out
}

func brokenReport(b adapters.BrokenFile) *doctorReport {
	r := &doctorReport{Adapter: b.Name, Source: b.File, broken: true}
	for _, line := range cmdutil.ProblemLines(b.Err) {
		r.problem("file", line)
	}
	return r
}

// checkAdapter fills in r for the registered adapter i.
func checkAdapter(r *doctorReport, i adapters.Info, base string, timeout time.Duration) {
	r.Source, r.Command = i.Source, i.Command
	if i.Version != nil {
		r.Tested = i.Version.Tested
	}
	r.AuthNote = i.Auth.Note

	path, err := lookCommand(i.Command, base)
	if err != nil {
		r.problem("command", err.Error())
	} else {
		r.Path, r.Found = path, true
		if path == i.Command {
			r.add(markOK, "command", "%s", path)
		} else {
			r.add(markOK, "command", "%s → %s", i.Command, path)
		}
	}

	switch v := i.Version; {
	case v == nil:
		// Nothing to ask (shell): being found is all.
	case !r.Found && v.Tested != "":
		r.add(markNone, "version", "not checked (tested %s)", v.Tested)
	case !r.Found:
	default:
		r.checkVersion(path, v, timeout)
	}

	for _, name := range i.Auth.Env {
		if os.Getenv(name) != "" {
			r.AuthEnv.Set = append(r.AuthEnv.Set, name)
		} else {
			r.AuthEnv.Missing = append(r.AuthEnv.Missing, name)
		}
	}
	switch {
	case len(i.Auth.Env) == 0 && i.Auth.Note != "":
		r.add(markNone, "auth", "%s", i.Auth.Note)
	case len(i.Auth.Env) == 0:
	case len(r.AuthEnv.Set) > 0:
		r.add(markOK, "auth", "%s set", strings.Join(r.AuthEnv.Set, ", "))
	default:
		msg := "none of " + strings.Join(i.Auth.Env, ", ") + " is set"
		if len(i.Auth.Env) == 1 {
			msg = i.Auth.Env[0] + " is not set"
		}
		if i.Auth.Note != "" {
			msg += "; " + i.Auth.Note
		}
		r.warn("auth", msg)
	}
	// MCP servers are started by the agent CLI, in the task's directory
	// (the base dir unless it says otherwise).
	for k := range r.MCP {
		m := &r.MCP[k]
		path, err := lookCommand(m.Command, base)
		if err != nil {
			r.problem("mcp", fmt.Sprintf("server %s: %v", m.Name, err))
			continue
		}
		m.Path, m.Found = path, true
		r.add(markOK, "mcp", "server %s: %s", m.Name, path)
	}
}

// checkVersion runs the version command of the adapter found at path and
// compares its first line with the tested version.
func (r *doctorReport) checkVersion(path string, v *adapters.VersionCheck, timeout time.Duration) {
	argv := strings.Join(append([]string{r.Command}, v.Args...), " ")
	line, err := adapters.AskVersion(path, v.Args, timeout)
	if err != nil {
		msg := fmt.Sprintf("`%s` %v", argv, err)
		if v.Tested != "" {
			msg += fmt.Sprintf(" (tested %s)", v.Tested)
		}
		r.warn("version", msg)
		return
	}
	r.Version = line
	if v.Tested == "" {
		r.add(markNone, "version", "%s (no tested version recorded)", line)
		return
	}
	ok := adapters.ContainsVersion(line, v.Tested)
	r.VersionOK = &ok
	if ok {
		r.add(markOK, "version", "%s: ok", line)
		return
	}
	msg := fmt.Sprintf("%s: differs: tested %s", line, v.Tested)
	if cmp, known := adapters.CompareVersion(line, v.Tested); known {
		iv := adapters.Installed{Line: line, Tested: v.Tested, Cmp: cmp, Known: true}
		which := "newer"
		if cmp < 0 {
			which = "older"
		}
		msg = fmt.Sprintf("%s: differs: tested %s (%s: %s)", line, v.Tested, which, iv.Risk())
		r.Relation = which
	}
	r.warn("version", msg)
}

// lookCommand finds an adapter's command as a task would start it: a name
// on PATH, or a path (relative to base, where tasks run by default).
func lookCommand(cmd, base string) (string, error) {
	if !strings.ContainsRune(cmd, '/') && !strings.ContainsRune(cmd, filepath.Separator) {
		p, err := exec.LookPath(cmd)
		switch {
		case errors.Is(err, exec.ErrDot):
			return "", fmt.Errorf("%s is found only through a relative PATH entry, which is not used", cmd)
		case err != nil:
			return "", fmt.Errorf("%s is not on PATH", cmd)
		}
		return p, nil
	}
	p := cmd
	if !filepath.IsAbs(p) {
		p = filepath.Join(base, p)
	}
	st, err := os.Stat(p)
	switch {
	case err != nil:
		return "", fmt.Errorf("%s does not exist", p)
	case st.IsDir() || st.Mode().Perm()&0o111 == 0:
		return "", fmt.Errorf("%s is not an executable file", p)
	}
	return p, nil
}

// printDoctor writes the text report: for FILE, which adapters it uses, then
// one block per adapter.
func printDoctor(w io.Writer, def *workflow.Definition, reports []*doctorReport) {
	if def != nil {
		names := make([]string, len(reports))
		for i, r := range reports {
			names[i] = r.Adapter
		}
		if len(names) == 0 {
			fmt.Fprintf(w, "%s uses no adapter\n", def.Source)
			return
		}
		fmt.Fprintf(w, "%s uses: %s\n", def.Source, strings.Join(names, ", "))
	}
	for i, r := range reports {
		if i > 0 || def != nil {
			fmt.Fprintln(w)
		}
		mark := markOK
		switch {
		case len(r.Problems) > 0:
			mark = markBad
		case len(r.Warnings) > 0:
			mark = markWarn
		}
		source := r.Source
		if source == "" {
			source = "-"
		}
		fmt.Fprintf(w, "%s %s (%s)\n", mark, r.Adapter, source)
		for _, l := range r.lines {
			fmt.Fprintf(w, "  %s %-8s %s\n", l.mark, l.label, l.text)
		}
	}
}
