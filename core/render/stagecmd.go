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
