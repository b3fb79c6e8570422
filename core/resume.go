package core

import (
	"fmt"

	"github.com/vibeteam/vibeteam/core/engine"
	"github.com/vibeteam/vibeteam/core/state"
	"github.com/vibeteam/vibeteam/core/vocab"
	"github.com/vibeteam/vibeteam/core/workflow"
)

// LoadResumable loads session id for a resume and checks, once, that it
// can be resumed: its file is whole, a journal damaged in the middle is
// accepted (acceptDamage; else *DamagedJournalError), and it is not
// completed (ErrAlreadyCompleted). Every resume (the resume command's, a
// backlog's of its beads) starts here, and hands the session on to
// RestoreVars and Resume, which do not load or check it again.
func LoadResumable(mgr *state.Manager, id string, acceptDamage bool) (*state.Session, error) {
	sess, err := mgr.Load(id)
	if err != nil {
		return nil, err
	}
	if err := sess.Check(); err != nil {
		return nil, usagef("session %s is damaged (%s): %v", id, mgr.SessionPath(id), err)
	}
	if sess.Broken != nil && !acceptDamage {
		return nil, &DamagedJournalError{ID: id, Damage: sess.Broken}
	}
	if sess.Status == state.StatusCompleted {
		return nil, fmt.Errorf("%w: %s", ErrAlreadyCompleted, id)
	}
	return sess, nil
}

// RestoreVars makes the variables opts names secret (--set-env,
// --set-file) in the session's definition, and puts back the secrets it
// was saved without (***) from opts.Vars or the environment; one missing
// is a usage error. Call it once, between LoadResumable and Resume.
func RestoreVars(sess *state.Session, opts RunOptions) error {
	MarkSecret(sess.WorkflowDefinition, opts.SecretVars)
	if err := RestoreSecrets(sess, opts.Vars); err != nil {
		return &vocab.UsageError{Err: err}
	}
	return nil
}

// renderPrompts renders a stage workflow's task prompts once, before the
// session is made or taken up again, so a missing variable is a usage
// error before anything starts; the engine runs with them. A grimoire's
// templates read step results: they render as each step starts (nil).
func renderPrompts(def *workflow.Definition, vars map[string]string) (map[string]string, error) {
	if def.Kind == workflow.KindGrimoire {
		return nil, nil
	}
	return engine.RenderPrompts(def, vars)
}

// usagef is a usage error (exit 2) with the message.
func usagef(format string, args ...any) error {
	return &vocab.UsageError{Err: fmt.Errorf(format, args...)}
}
