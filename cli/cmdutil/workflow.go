package cmdutil

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	ucli "github.com/urfave/cli/v2"
	"github.com/vibeteam/vibeteam/adapters"
	"github.com/vibeteam/vibeteam/builtin"
	"github.com/vibeteam/vibeteam/core/beads"
	"github.com/vibeteam/vibeteam/core/workflow"
)

// LoadDefinition resolves FILE|NAME (a file, .vibeteam/workflows/NAME.*, or
// a built-in workflow) and loads it; problems exit 2 naming file:line:col.
// run, resume, doctor and preview find a workflow this one way.
func LoadDefinition(arg, base string, opts workflow.LoadOptions) (*workflow.Definition, error) {
	path, err := workflow.Resolve(arg, base)
	if err != nil {
		var nf *workflow.NotFoundError
		if errors.As(err, &nf) {
			if data, source, ok := builtin.Workflow(arg); ok {
				def, perr := workflow.Parse(data, source, opts)
				if perr != nil {
					return nil, perr
				}
				return def, nil
			}
			return nil, Exitf(ExitUsage, "%v (built-in workflows: %s)", err, strings.Join(builtin.WorkflowNames(), ", "))
		}
		return nil, err
	}
	def, err := workflow.LoadFile(path, opts)
	if err != nil {
		return nil, err
	}
	return def, nil
}

// ProjectGate is the default merge gate of the project at base
// (config.yaml merge.gate, "" none), for loading grimoires; nil when the
// config cannot be read (what chooses a grimoire reports that).
func ProjectGate(base string) *string {
	cfg, err := beads.LoadConfig(base)
	if err != nil {
		return nil
	}
	return &cfg.Gate
}

// BaseAndRegistry are the base dir of a command (--base-dir) and its
// adapters; the user adapter files that could not be loaded are named on
// warn, unless it is nil (a command that lists them itself).
func BaseAndRegistry(c *ucli.Context, warn io.Writer) (string, *adapters.Registry, error) {
	base, err := BaseDir(c)
	if err != nil {
		return "", nil, err
	}
	reg, err := LoadRegistry(base)
	if err != nil {
		return "", nil, err
	}
	if warn != nil {
		WarnBrokenAdapters(warn, reg)
	}
	return base, reg, nil
}

// WarnBrokenAdapters says, in one line, which user adapter files could not
// be loaded: they fail only the workflows that use them, so the others go
// on, but the user should know.
func WarnBrokenAdapters(w io.Writer, reg *adapters.Registry) {
	broken := reg.BrokenFiles()
	if len(broken) == 0 {
		return
	}
	files := make([]string, len(broken))
	for i, b := range broken {
		files[i] = b.File
	}
	what := "a broken adapter file"
	if len(files) > 1 {
		what = strconv.Itoa(len(files)) + " broken adapter files"
	}
	fmt.Fprintf(w, "vibeteam: warning: ignoring %s (%s); vibeteam adapters shows the problems\n", what, strings.Join(files, ", "))
}

// InstallCommands are the commands that install the CLIs of the built-in
// adapters, by command name (validate's hint, doctor's advice).
var InstallCommands = map[string]string{
	"claude":   "npm i -g @anthropic-ai/claude-code",
	"codex":    "npm i -g @openai/codex",
	"gemini":   "npm i -g @google/gemini-cli",
	"opencode": "npm i -g opencode-ai",
	"qwen":     "npm i -g @qwen-code/qwen-code",
	// The ACP adapters of claude and codex run the user's CLI: both
	// packages.
	"claude-agent-acp": "npm i -g @agentclientprotocol/claude-agent-acp @anthropic-ai/claude-code",
	"codex-acp":        "npm i -g @agentclientprotocol/codex-acp @openai/codex",
}

// ProblemLines is one file:line:col: field: message line per problem of a
// broken adapter file.
func ProblemLines(err error) []string {
	var list adapters.ErrorList
	if !errors.As(err, &list) {
		return []string{err.Error()}
	}
	out := make([]string, len(list))
	for i, e := range list {
		out[i] = e.Error()
	}
	return out
}
