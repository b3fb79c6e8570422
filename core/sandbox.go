package core

import (
	"os"
	"path/filepath"

	"github.com/vibeteam/vibeteam/core/sandbox"
	"github.com/vibeteam/vibeteam/core/state"
)

// sandboxPolicy is the sandbox of sess (nil without one), cfg (the
// project's settings) with its workflow's sandbox: block over it: its processes
// may write its working directory (workDir: the bead's worktree, or the
// base directory), and what the agents write to their own state goes to
// the session's directory under .vibeteam/sandbox/.
func sandboxPolicy(sess *state.Session, cfg *sandbox.Config, workDir string) (*sandbox.Policy, error) {
	sess.Sandbox = cfg
	if cfg == nil {
		return nil, nil
	}
	bwrap, err := sandbox.Find()
	if err != nil {
		return nil, err
	}
	if workDir == "" {
		workDir = sess.BaseDir
	}
	home, _ := os.UserHomeDir()
	settings := *cfg
	if def := sess.WorkflowDefinition; def != nil && def.Sandbox != nil {
		settings = settings.Merge(*def.Sandbox)
	}
	return &sandbox.Policy{
		Bwrap: bwrap, BaseDir: sess.BaseDir, WorkDir: workDir, Home: home, Config: settings,
		StateDir: filepath.Join(sess.BaseDir, ".vibeteam", "sandbox", sess.ID),
	}, nil
}
