// Package validatecmd is `vibeteam validate`: workflow and adapter files
// checked as run checks them, nothing run, every problem as file:line:col.
package validatecmd

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/vibeteam/vibeteam/adapters"
	"github.com/vibeteam/vibeteam/builtin"
	"github.com/vibeteam/vibeteam/cli/cmdutil"
	"github.com/vibeteam/vibeteam/core/render"
	"github.com/vibeteam/vibeteam/core/workflow"
	"github.com/vibeteam/vibeteam/internal/source"
)

// Options are what `vibeteam validate` is asked.
type Options struct {
	IO       cmdutil.IO
	Base     string   // the project's base dir
	Files    []string // FILE|NAME..., at least one
	Headless bool     // --headless
	Sets     []string // --set key=value
	JSON     bool     // --json
	Offline  bool     // --offline
}

// NewCmdValidate is the `validate` command. Its action gathers the Options
// and hands them to runF (nil: Run).
func NewCmdValidate(streams cmdutil.IO, runF func(*Options) error) *ucli.Command {
	if runF == nil {
		runF = Run
	}
	return &ucli.Command{
		Name:      "validate",
		Usage:     "check workflow and adapter files without running anything: every problem as file:line:col",
		ArgsUsage: "FILE|NAME...",
		Description: `Checks each workflow (a file, .vibeteam/workflows/NAME.*, or a built-in) for
everything run checks before it starts a task: structure, ids, adapters and
their modes, prompts rendered with the --set variables (a missing one is an
error), what an adapter's mode needs (a prompt for shell), and that each
task's cwd exists, and, as run does, that each adapter's CLI is installed
(with the command that installs a built-in one). An adapter file
(top-level command: or modes:) is checked as one.

Each problem is one line on stderr, file:line:col: field: message. A
warning reads file:line:col: warning: field: message. With --offline, an
agent CLI that is not installed here is a warning instead of an error: the
file is checked for a machine where it is installed (CI, another person's).

--json prints one JSON array on stdout instead, [] when there is nothing to
report; each problem is an object
  {"file", "line", "col", "field", "message", "severity"}
with severity "error" or "warning", and line and col 0 when unknown.

Exit status: 0 when no file has an error (warnings allowed), 2 otherwise.`,
		Flags: []ucli.Flag{
			cmdutil.BaseDirFlag,
			&ucli.BoolFlag{Name: "headless", Usage: "validate as if run with --headless (every task needs a prompt)"},
			&ucli.StringSliceFlag{Name: "set", Usage: "template variable `key=value` for prompts, as run takes it (repeatable)"},
			&ucli.BoolFlag{Name: "json", Usage: "print the problems as one JSON array on stdout (see above)"},
			&ucli.BoolFlag{Name: "offline", Usage: "an agent CLI that is not installed here is a warning, not an error (the file runs elsewhere)"},
		},
		Action: func(c *ucli.Context) error {
			if c.NArg() == 0 {
				return cmdutil.Exitf(cmdutil.ExitUsage, "validate needs at least one workflow or adapter file")
			}
			base, err := cmdutil.BaseDir(c)
			if err != nil {
				return err
			}
			return runF(&Options{IO: streams, Base: base, Files: c.Args().Slice(), Headless: c.Bool("headless"),
				Sets: c.StringSlice("set"), JSON: c.Bool("json"), Offline: c.Bool("offline")})
		},
	}
}

// Run validates the files of opts and reports their problems.
func Run(opts *Options) error {
	vars, err := render.ParseSets(opts.Sets)
	if err != nil {
		return err
	}
	reg, err := cmdutil.LoadRegistry(opts.Base)
	if err != nil {
		return err
	}
	cmdutil.WarnBrokenAdapters(opts.IO.Err, reg)
	lo := workflow.LoadOptions{
		Adapters:      reg,
		ForceHeadless: opts.Headless,
		Vars:          vars,
		BaseDir:       opts.Base,
		Commands:      workflow.CheckError,
		DefaultGate:   cmdutil.ProjectGate(opts.Base),
	}
	if opts.Offline {
		lo.Commands = workflow.CheckWarn
	}
	all := []problem{}
	bad := 0
	for _, arg := range opts.Files {
		probs, summary := validateOne(arg, opts.Base, lo)
		for i := range probs {
			probs[i].Message = withInstallHint(probs[i].Message)
		}
		all = append(all, probs...)
		failed := slices.ContainsFunc(probs, func(p problem) bool { return p.Severity == severityError })
		if failed {
			bad++
		}
		if !opts.JSON {
			printOne(opts, probs, summary, failed)
		}
	}
	if opts.JSON {
		enc := json.NewEncoder(opts.IO.Out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(all); err != nil {
			return err
		}
	}
	if bad > 0 {
		return cmdutil.Exitf(cmdutil.ExitUsage, "%d of %d file(s) invalid", bad, len(opts.Files))
	}
	return nil
}

// printOne is the text report of one file: its problems on stderr, and
// when it has no error, "ok" and the sandbox its run would have.
func printOne(opts *Options, probs []problem, summary summary, failed bool) {
	for _, p := range probs {
		fmt.Fprintln(opts.IO.Err, p)
	}
	if failed {
		return
	}
	fmt.Fprintf(opts.IO.Out, "%s: ok (%s)\n", summary.file, summary.what)
	if summary.def != nil {
		cmdutil.NewSandboxView(opts.Base, summary.def, false, "").Print(opts.IO.Out, "  ")
	}
}

// Severities of a problem in validate's output.
const (
	severityError   = "error"
	severityWarning = "warning"
)

// problem is one line of validate's report, or one object of --json.
type problem struct {
	File     string `json:"file"`
	Line     int    `json:"line"`
	Col      int    `json:"col"`
	Field    string `json:"field"`
	Message  string `json:"message"`
	Severity string `json:"severity"`
}

// String is the file:line:col: [warning: ]field: message of the text report.
func (p problem) String() string {
	e := workflow.Error{Pos: workflow.Pos{File: p.File, Line: p.Line, Col: p.Col}, Field: p.Field, Msg: p.Message, Warning: p.Severity == severityWarning}
	return e.Error()
}

type summary struct {
	file, what string
	def        *workflow.Definition // a workflow's (its sandbox is shown)
}

// validateOne checks one argument of validate: a workflow or adapter file, a
// named workflow or a built-in one.
func validateOne(arg, base string, opts workflow.LoadOptions) ([]problem, summary) {
	path, err := workflow.Resolve(arg, base)
	if err != nil {
		var nf *workflow.NotFoundError
		data, src, ok := builtin.Workflow(arg)
		if !errors.As(err, &nf) || !ok {
			if errors.As(err, &nf) {
				err = fmt.Errorf("%v (built-in workflows: %s)", err, strings.Join(builtin.WorkflowNames(), ", "))
			}
			return []problem{{File: arg, Message: err.Error(), Severity: severityError}}, summary{}
		}
		def, probs := workflow.Diagnose(data, src, opts)
		return workflowProblems(probs), workflowSummary(src, def)
	}
	data, err := source.Read(path)
	if err != nil {
		return []problem{{File: path, Message: source.Reason(err), Severity: severityError}}, summary{}
	}
	if isAdapterFile(path, base, data) {
		return validateAdapter(path, data)
	}
	def, probs := workflow.Diagnose(data, path, opts)
	return workflowProblems(probs), workflowSummary(path, def)
}

// isAdapterFile tells an adapter file from a workflow: it lives in
// .vibeteam/adapters, or its top level has an adapter's keys and none of a
// workflow's. Checked as a workflow, an adapter file would only get a list
// of "unknown key" errors.
func isAdapterFile(path, base string, data []byte) bool {
	if abs, err := filepath.Abs(path); err == nil && filepath.Dir(abs) == filepath.Join(base, ".vibeteam", "adapters") {
		return true
	}
	keys := workflow.TopLevelKeys(data, path)
	has := func(k string) bool { return slices.Contains(keys, k) }
	return (has("command") || has("modes")) && !has("id") && !has("stages") && !has("steps")
}

func validateAdapter(path string, data []byte) ([]problem, summary) {
	info, err := adapters.Parse(path, data)
	if err != nil {
		var list adapters.ErrorList
		if !errors.As(err, &list) {
			return []problem{{File: path, Message: err.Error(), Severity: severityError}}, summary{}
		}
		probs := make([]problem, 0, len(list))
		for _, e := range list {
			probs = append(probs, problem{File: e.File, Line: e.Line, Col: e.Col, Field: e.Field, Message: e.Msg, Severity: severityError})
		}
		return probs, summary{}
	}
	var probs []problem
	if !info.OnPath {
		probs = append(probs, problem{File: path, Field: "command", Severity: severityWarning,
			Message: fmt.Sprintf("command %q is not installed (not found on PATH)", info.Command)})
	}
	return probs, summary{file: path, what: fmt.Sprintf("adapter %q", info.Name)}
}

func workflowProblems(list workflow.ErrorList) []problem {
	probs := make([]problem, 0, len(list))
	for _, e := range list {
		sev := severityError
		if e.Warning {
			sev = severityWarning
		}
		probs = append(probs, problem{File: e.Pos.File, Line: e.Pos.Line, Col: e.Pos.Col, Field: e.Field, Message: e.Msg, Severity: sev})
	}
	return probs
}

func workflowSummary(file string, def *workflow.Definition) summary {
	if def == nil {
		return summary{}
	}
	if def.Kind == workflow.KindGrimoire {
		n := 0
		for range def.AllSteps() {
			n++
		}
		return summary{file, fmt.Sprintf("grimoire, %d steps", n), def}
	}
	n := 0
	for _, st := range def.Stages() {
		n += len(st.Tasks)
	}
	return summary{file, fmt.Sprintf("%d stages, %d tasks", len(def.Stages()), n), def}
}

// notInstalledRE matches the problem of an adapter CLI not found on PATH.
var notInstalledRE = regexp.MustCompile(`^(?:acp )?command "([^"]+)" (?:of adapter "[^"]+" )?is not installed \(not found on PATH\)$`)

// withInstallHint adds the install command of a built-in adapter's CLI to
// the problem that says it is not installed.
func withInstallHint(msg string) string {
	if m := notInstalledRE.FindStringSubmatch(msg); m != nil {
		if install, ok := cmdutil.InstallCommands[m[1]]; ok {
			return msg + "; install it: " + install
		}
	}
	return msg
}
