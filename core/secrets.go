package core

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/vibeteam/vibeteam/adapters"
	"github.com/vibeteam/vibeteam/core/state"
	"github.com/vibeteam/vibeteam/core/workflow"
)

// secretValues are the values of the session's secrets: --set variables
// and task env: keys the definition calls secret (workflow.IsSecret).
func secretValues(sess *state.Session) []string {
	def := sess.WorkflowDefinition
	var vs []string
	for k, v := range sess.Vars {
		if def.IsSecret(k) {
			vs = append(vs, v)
		}
	}
	eachTask(def, func(t *workflow.Task) {
		for k, v := range t.Env {
			if def.IsSecret(k) {
				vs = append(vs, v)
			}
		}
	})
	return vs
}

// authValues are the values of the credentials the session's tasks
// inherit (the auth.env of the built-in adapters and of those it uses):
// a task that prints one has it written as ***, as a secret.
func (o *Orchestrator) authValues(sess *state.Session) []string {
	if o.registry == nil {
		return adapters.BuiltinAuthValues()
	}
	var names []string
	eachTask(sess.WorkflowDefinition, func(t *workflow.Task) { names = append(names, t.Adapter) })
	if def := sess.WorkflowDefinition; def != nil {
		for s := range def.AllSteps() {
			if s.Agent != nil {
				names = append(names, s.Agent.Adapter)
			}
		}
	}
	return adapters.AuthValues(o.registry.AuthEnv(names...))
}

func eachTask(def *workflow.Definition, f func(*workflow.Task)) {
	if def == nil {
		return
	}
	for s := range def.AllSteps() {
		for i := range s.Tasks {
			f(&s.Tasks[i])
		}
	}
}

// MarkSecret makes the variables named secrets of def, whatever their
// names (given with --set-env or --set-file): written as ***, and asked
// for again on resume.
func MarkSecret(def *workflow.Definition, names []string) {
	if def == nil {
		return
	}
	for _, n := range names {
		if n != "" && !def.IsSecret(n) {
			def.Secrets = append(def.Secrets, n)
		}
	}
}

// RestoreSecrets gives a loaded session the values of its secrets back,
// which were saved as ***: each from --set (vars), else from the
// environment variable of the same name. It names those it finds nowhere.
func RestoreSecrets(sess *state.Session, vars map[string]string) error {
	def := sess.WorkflowDefinition
	var missing []string
	find := func(name string) (string, bool) {
		if v, ok := vars[name]; ok {
			return v, true
		}
		return os.LookupEnv(name)
	}
	for k, v := range sess.Vars {
		if v != state.Redacted || !def.IsSecret(k) {
			continue
		}
		if real, ok := find(k); ok {
			sess.Vars[k] = real
		} else if !slices.Contains(missing, k) {
			missing = append(missing, k)
		}
	}
	eachTask(def, func(t *workflow.Task) {
		for k, v := range t.Env {
			if v != state.Redacted || !def.IsSecret(k) {
				continue
			}
			if real, ok := find(k); ok {
				t.Env[k] = real
			} else if !slices.Contains(missing, k) {
				missing = append(missing, k)
			}
		}
	})
	if len(missing) > 0 {
		slices.Sort(missing)
		return fmt.Errorf("session %s needs the value of %s again: secrets are not saved; give each with --set NAME=VALUE or set it in the environment",
			sess.ID, strings.Join(missing, ", "))
	}
	return nil
}
