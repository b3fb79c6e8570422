package workflow

// AdapterSet is what validation needs to know about registered adapters.
// *adapters.Registry satisfies it.
type AdapterSet interface {
	Has(name string) bool
	Names() []string // sorted
}

// ModeSet is optionally implemented by an AdapterSet that knows which
// execution modes each adapter has (*adapters.Registry does).
type ModeSet interface {
	HasMode(adapter, mode string) bool
	TakesQueue(adapter, mode string) bool
}

// LaunchSet is optionally implemented by an AdapterSet that can build a
// task's command line, so that what would fail as the task starts (a mode
// that needs a prompt and has none, a prompt the mode cannot pass safely) is
// found before anything runs. *adapters.Registry implements it.
type LaunchSet interface {
	CheckLaunch(adapter, mode, prompt string, extraArgs []string) error
}

// MCPSet is optionally implemented by an AdapterSet that knows which
// adapters can give their CLI MCP servers (an adapter file's mcp: key).
type MCPSet interface {
	TakesMCP(adapter string) bool
}

// ModeMCPSet is optionally implemented by an MCPSet that knows whether an
// adapter's agent takes MCP servers in one mode: over ACP they go in
// session/new, whatever the adapter file's mcp: key says.
type ModeMCPSet interface {
	TakesMCPIn(adapter, mode string) bool
}

// ModeCommandSet is optionally implemented by a CommandSet whose adapters
// run another command in some mode (an acp mode's own command, such as
// claude-agent-acp), to check the command a task of that mode starts.
type ModeCommandSet interface {
	CheckModeCommand(adapter, mode, dir string) error
}

// CommandSet is optionally implemented by an AdapterSet that can tell
// whether an adapter's command is installed, for a task running in dir.
type CommandSet interface {
	CheckCommand(adapter, dir string) error
}

// BrokenSet is optionally implemented by an AdapterSet that keeps the
// adapter files it could not load, so that a task naming one is told why
// instead of "unknown adapter". Broken returns nil for a name that is not
// broken.
type BrokenSet interface {
	Broken(adapter string) error
}

// Check says how a problem that depends on the machine is reported.
type Check int

const (
	CheckOff   Check = iota // not looked for
	CheckWarn               // a warning: validate on one machine, run on another
	CheckError              // an error: run, which is about to start the tasks
)

// LoadOptions control loading and validation.
type LoadOptions struct {
	Adapters      AdapterSet
	ForceHeadless bool // --headless: every task runs headless, so each needs a prompt
	// Vars, when not nil, are the --set variables: every prompt is rendered
	// with them (and the goal), so a missing variable is reported at its
	// task. nil checks the template syntax only.
	Vars map[string]string
	// BaseDir, when set, is the directory tasks run in: a task's cwd,
	// relative to it, must be an existing directory.
	BaseDir string
	// Commands is how an adapter whose command is not installed is
	// reported; it needs an AdapterSet that is a CommandSet.
	Commands Check
	// DefaultGate, when not nil, is the project's default merge gate
	// (config.yaml merge.gate; "" none): a merge step without a gate of
	// its own gets it (unless gate: false), and gate: true without one is
	// an error. nil leaves gates as written.
	DefaultGate *string
}
