package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/vibeteam/vibeteam/adapters"
	"github.com/vibeteam/vibeteam/cli/cmdutil"
	"github.com/vibeteam/vibeteam/core"
	"github.com/vibeteam/vibeteam/core/state"
	"github.com/vibeteam/vibeteam/core/workflow"
)

// fileDigest is the sha256 of a workflow file, or "" for a definition that
// did not come from a file (a built-in).
func fileDigest(path string) string {
	if path == "" {
		return ""
	}
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return ""
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return ""
	}
	return hex.EncodeToString(h.Sum(nil))
}

// sourceChanged reports whether the session's workflow file differs from
// the version it started with (false when that cannot be told).
func sourceChanged(sess *state.Session) bool {
	if sess.SourceDigest == "" || sess.WorkflowDefinition == nil {
		return false
	}
	now := fileDigest(sess.WorkflowDefinition.Source)
	return now != "" && now != sess.SourceDigest
}

// applyReload fills opts for resume: with --reload, the session's workflow
// file is read and validated again and replaces the stored definition;
// without it, a changed file is pointed out. --rerun names tasks to run
// again.
func applyReload(c *ucli.Context, streams IO, base string, reg *adapters.Registry, sess *state.Session, opts *core.RunOptions) error {
	src := ""
	if sess.WorkflowDefinition != nil {
		src = sess.WorkflowDefinition.Source
	}
	if !c.Bool("reload") {
		if sourceChanged(sess) {
			fmt.Fprintf(streams.Err, "note: %s has changed since session %s started; this resume runs the stored version (vibeteam resume --reload %s runs the new one)\n", src, sess.ID, sess.ID)
		}
		return checkRerun(c.StringSlice("rerun"), sess.WorkflowDefinition, opts)
	}
	if fileDigest(src) == "" {
		return exitf(ExitUsage, "--reload: session %s did not come from a workflow file that can be read (%q)", sess.ID, src)
	}
	// Checked as run checks a file, with the variables the session has.
	lo := loadOptions(c, reg, base)
	vars := map[string]string{}
	for k, v := range sess.Vars {
		vars[k] = v
	}
	for k, v := range lo.Vars {
		vars[k] = v
	}
	lo.Vars = vars
	def, err := cmdutil.LoadDefinition(src, base, lo)
	if err != nil {
		return err
	}
	opts.Reload = def
	opts.SourceDigest = fileDigest(src)
	return checkRerun(c.StringSlice("rerun"), def, opts)
}

// checkRerun accepts --rerun ids that are tasks of def.
func checkRerun(ids []string, def *workflow.Definition, opts *core.RunOptions) error {
	var known []string
	for _, st := range def.Stages() {
		for _, t := range st.Tasks {
			known = append(known, t.ID)
		}
	}
	for _, id := range ids {
		if !slices.Contains(known, id) {
			return exitf(ExitUsage, "--rerun %s: the workflow has no task %q (tasks: %s)", id, id, strings.Join(known, ", "))
		}
	}
	opts.Rerun = ids
	return nil
}

// resumeHint is the command that continues a failed session.
func resumeHint(sess *state.Session) string {
	if sourceChanged(sess) {
		return fmt.Sprintf("%s has changed; to run the new version: vibeteam resume --reload %s", sess.WorkflowDefinition.Source, sess.ID)
	}
	if sess.SourceDigest != "" {
		return fmt.Sprintf("after fixing it: vibeteam resume %s (add --reload if you edit %s)", sess.ID, sess.WorkflowDefinition.Source)
	}
	return "after fixing it: vibeteam resume " + sess.ID
}
