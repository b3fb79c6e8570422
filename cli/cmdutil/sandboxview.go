package cmdutil

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/vibeteam/vibeteam/core"
	"github.com/vibeteam/vibeteam/core/beads"
	"github.com/vibeteam/vibeteam/core/sandbox"
	"github.com/vibeteam/vibeteam/core/workflow"
	"github.com/vibeteam/vibeteam/ui"
)

// SandboxEnv turns the sandbox on or off for CI and scripts (on|off); a
// flag wins over it, and it wins over the files.
const SandboxEnv = "VIBETEAM_SANDBOX"

// NoSandboxWhy says why there is no sandbox here.
func NoSandboxWhy(err error) error {
	if runtime.GOOS != "linux" {
		return fmt.Errorf("the sandbox is Linux-only (bubblewrap) for now; on %s, use --no-sandbox", runtime.GOOS)
	}
	return err
}

// SandboxView is the sandbox a run of a definition would have, as
// validate and preview show it: whether it is on and why, what every
// process gets, and each step's or task's own writable paths and network.
type SandboxView struct {
	def     *workflow.Definition
	project *sandbox.Config // .vibeteam/config.yaml's block; nil: none
	policy  *sandbox.Policy // for paths only: nothing is started or made
	beadRun bool
	hosts   []string // the adapters' model APIs, which every socket allows
	keys    []string // the keys of the environment the proxy would hold
}

// NewSandboxView is the view of def in base; bead is the bead's id for a
// bead run ("" otherwise).
func NewSandboxView(base string, def *workflow.Definition, beadRun bool, bead string) *SandboxView {
	v := &SandboxView{def: def, beadRun: beadRun}
	if project, err := beads.LoadConfig(base); err == nil {
		v.project = project.Sandbox
	}
	home, _ := os.UserHomeDir()
	work := base
	if beadRun {
		if bead == "" {
			bead = "BEAD"
		}
		work = filepath.Join(base, ".worktrees", bead)
	}
	v.policy = &sandbox.Policy{BaseDir: base, WorkDir: work, Home: home}
	v.hosts, v.keys = core.SandboxHosts(def, os.Environ())
	return v
}

// base is what every process of the run gets: config.yaml's block, then
// the definition's over it.
func (v *SandboxView) base() sandbox.Config {
	var cfg sandbox.Config
	if v.project != nil {
		cfg = *v.project
	}
	if v.def.Sandbox != nil {
		cfg = cfg.Merge(*v.def.Sandbox)
	}
	return cfg
}

// state says whether a run is sandboxed, and who decides it, as run
// decides it without flags (--sandbox, --no-sandbox win over all of it).
func (v *SandboxView) state() string {
	var on string
	switch env := strings.ToLower(strings.TrimSpace(os.Getenv(SandboxEnv))); {
	case env == "off" || env == "0" || env == "false":
		return "off (" + SandboxEnv + "=off; --sandbox turns it on); when on:"
	case env == "on" || env == "1" || env == "true":
		on = "on (" + SandboxEnv + "=on)"
	case v.def.Sandbox != nil:
		on = "on (the sandbox: block of " + v.def.Source + ")"
	case v.project != nil:
		on = "on (the sandbox: block of " + beads.ConfigFile + ")"
	case v.beadRun:
		on = "on (the default for a bead run)"
	default:
		return "off for this run unless asked (--sandbox, " + SandboxEnv + "=on); on by default for bead runs and --auto-approve; when on:"
	}
	if _, err := sandbox.Find(); err != nil {
		on += ", but " + NoSandboxWhy(err).Error()
	}
	return on + "; --no-sandbox turns it off"
}

// common are the lines that hold for every process of the run.
func (v *SandboxView) common() []string {
	work := "the base directory " + v.policy.WorkDir
	if v.beadRun {
		work = "the bead's worktree " + v.policy.WorkDir
	}
	caches := "the build caches " + strings.Join(home(v.policy.CachesToShow()), ", ")
	if v.base().Caches == sandbox.CachesPrivate {
		caches = "private build caches (the session's own)"
	}
	lines := []string{
		"writable: " + work + ", a private /tmp, " + caches,
		"never visible: ~/" + strings.Join(sandbox.Secrets, ", ~/"),
		"read-only inside: .git/hooks, .git/config, .vibeteam/, shell start-up files",
	}
	if len(v.keys) > 0 {
		lines = append(lines, "keys held by the proxy (a placeholder inside): "+strings.Join(v.keys, ", "))
	}
	return lines
}

// of is the one line of a step's or task's own sandbox: over what every
// process gets, its write:, hide:, env: and its network.
func (v *SandboxView) of(own *sandbox.Config) string {
	cfg := v.base()
	if own != nil {
		cfg = cfg.Merge(*own)
	}
	write := []string{"the work dir"}
	for _, w := range cfg.Write {
		write = append(write, home([]string{v.policy.Abs(w)})...)
	}
	parts := []string{"write " + strings.Join(write, ", ")}
	switch cfg.NetworkOf() {
	case sandbox.NetworkNone:
		parts = append(parts, "network none (the model routes only)")
	case sandbox.NetworkAll:
		parts = append(parts, "network all (the host's own, unfenced)")
	default:
		allow := append(slices.Clone(cfg.Allow), v.hosts...)
		if len(allow) == 0 {
			parts = append(parts, "network allow: no host (the model routes only)")
		} else {
			parts = append(parts, "network allow: "+strings.Join(allow, ", "))
		}
	}
	if len(cfg.Hide) > 0 {
		parts = append(parts, "hide "+strings.Join(home(mapAbs(v.policy, cfg.Hide)), ", "))
	}
	if len(cfg.Env) > 0 {
		parts = append(parts, "env +"+strings.Join(cfg.Env, ", +"))
	}
	if cfg.Caches == sandbox.CachesPrivate && v.base().Caches != sandbox.CachesPrivate {
		parts = append(parts, "caches private")
	}
	return strings.Join(parts, "; ")
}

func mapAbs(p *sandbox.Policy, paths []string) []string {
	out := make([]string, len(paths))
	for i, s := range paths {
		out[i] = p.Abs(s)
	}
	return out
}

// home writes paths under the home as ~/….
func home(paths []string) []string {
	h, _ := os.UserHomeDir()
	out := make([]string, len(paths))
	for i, p := range paths {
		if rel, ok := strings.CutPrefix(p, h+"/"); ok && h != "" && h != "/" {
			p = "~/" + rel
		}
		out[i] = p
	}
	return out
}

// Print writes the whole view: the state, what every process gets, and
// one line per step, task and merge gate that runs a process.
func (v *SandboxView) Print(w io.Writer, indent string) {
	fmt.Fprintf(w, "%ssandbox: %s\n", indent, ui.Safe(v.state()))
	for _, l := range v.common() {
		fmt.Fprintf(w, "%s  %s\n", indent, ui.Safe(l))
	}
	line := func(what string, own *sandbox.Config) {
		fmt.Fprintf(w, "%s  %s: %s\n", indent, ui.Safe(what), ui.Safe(v.of(own)))
	}
	if v.def.Kind != workflow.KindGrimoire {
		for _, st := range v.def.Stages() {
			for _, t := range st.Tasks {
				line(fmt.Sprintf("task %s (%s, line %d)", t.ID, t.Adapter, t.Pos.Line), t.Sandbox)
			}
		}
		return
	}
	for s := range v.def.AllSteps() {
		for _, what := range v.processes(s) {
			line(what.label, what.own)
		}
	}
}

type process struct {
	label string
	own   *sandbox.Config
}

// processes are what a step starts that runs in the sandbox: a script,
// an agent, a stage's tasks, a merge gate (a loop starts nothing itself).
func (v *SandboxView) processes(s *workflow.Step) []process {
	at := fmt.Sprintf("line %d", s.Pos.Line)
	switch {
	case s.Script != nil:
		return []process{{fmt.Sprintf("step %s (script, %s)", s.Label(), at), s.Sandbox}}
	case s.Agent != nil:
		return []process{{fmt.Sprintf("step %s (agent %s, %s)", s.Label(), s.Agent.Adapter, at), s.Sandbox}}
	case s.Merge != nil && s.Merge.Gate != "":
		return []process{{fmt.Sprintf("step %s (merge gate, %s)", s.Label(), at), s.Sandbox}}
	case s.Type == workflow.StepStage:
		var out []process
		for _, t := range s.Tasks {
			out = append(out, process{fmt.Sprintf("step %s task %s (%s, line %d)", s.Label(), t.ID, t.Adapter, t.Pos.Line), t.Sandbox})
		}
		return out
	}
	return nil
}
