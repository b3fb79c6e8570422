package render

import (
	"fmt"
	"strings"
)

// CommandPrompt renders the prompt of a stage task whose adapter runs it as
// a shell command line (the built-in shell adapter: sh -c PROMPT) with the
// run's variables and goal: as a script step's command is, each value
// quoted for where it lands, so a --set value or a goal is data, never
// code. {{raw .x}} inserts one unescaped.
func CommandPrompt(taskID, text string, vars map[string]string, goal string) (string, error) {
	if !strings.Contains(text, "{{") {
		return text, nil
	}
	s := NewScope(goal, vars)
	if g, ok := vars["goal"]; ok {
		s.Goal = g // a --set goal wins, as in Prompt
	}
	out, _, err := s.Command(taskID, text)
	if err != nil {
		msg := strings.TrimPrefix(err.Error(), fmt.Sprintf("step %q: command: ", taskID))
		return "", fmt.Errorf("prompt of task %q: %s", taskID, msg)
	}
	return out, nil
}

// TaskPrompt renders the prompt of task id of a grimoire's stage step:
// with command (the task's adapter runs its prompt as a shell command line)
// as Command does, each value quoted, and its warnings returned; otherwise
// as Render does. Run and preview both render a stage's tasks with it.
func (s *Scope) TaskPrompt(step, id, prompt string, command bool) (string, []string, error) {
	if command {
		return s.Command(step+"."+id, prompt)
	}
	out, err := s.Render(step, "tasks."+id+".prompt", prompt)
	return out, nil, err
}
