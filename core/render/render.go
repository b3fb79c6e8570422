// Package render fills in the templates of definitions: the prompts of stage
// tasks (Prompt), and for grimoire steps a Scope of variables that renders
// inputs (Render), conditions (When), shell-quoted script commands (Command)
// and agent prompts made of spells, partials and the system prompt
// (AgentPrompt); ParseAgentOutput reads what an agent reports back.
package render

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"text/template"
	"time"
)

// maxOutput bounds a rendered prompt. A template can loop ({{range 1e9}}),
// and a runaway prompt should be an error, not an exhausted machine.
const maxOutput = 8 << 20

var errTooLarge = errors.New("too large")

// maxRenderTime bounds one prompt's rendering (a variable for tests).
var maxRenderTime = 5 * time.Second

// Prompt renders a Go text/template prompt with vars available as {{.key}}
// and the goal as {{.goal}}. A --set goal=... in vars wins over the goal of
// the workflow, being the more specific of the two. A variable the template
// uses but vars lacks is an error, so that an agent never receives a prompt
// with "<no value>" in it.
func Prompt(taskID, text string, vars map[string]string, goal string) (string, error) {
	// Most prompts are plain text; skip the template machinery for them.
	if !strings.Contains(text, "{{") {
		return text, nil
	}
	tmpl, err := template.New("prompt").Option("missingkey=error").Funcs(sprigFuncs).Parse(text)
	if err != nil {
		return "", fmt.Errorf("prompt of task %q: %s", taskID, cleanError(err))
	}
	data := make(map[string]any, len(vars)+1)
	data["goal"] = goal
	for k, v := range vars {
		data[k] = v
	}
	out := &limitedBuffer{max: maxOutput}
	// A template can loop without writing ({{range 1000000000000}}{{end}}),
	// which the size limit never stops. text/template cannot be cancelled,
	// so a render that runs too long is abandoned: the command using it
	// exits with the error soon after.
	done := make(chan error, 1)
	go func() { done <- tmpl.Execute(out, data) }()
	select {
	case err = <-done:
	case <-time.After(maxRenderTime):
		return "", fmt.Errorf("prompt of task %q: rendering took longer than %s (a range over a huge number?)", taskID, maxRenderTime)
	}
	if err != nil {
		if errors.Is(err, errTooLarge) {
			return "", fmt.Errorf("prompt of task %q: rendered prompt is larger than %d MiB", taskID, maxOutput>>20)
		}
		if m := missingKeyRE.FindStringSubmatch(err.Error()); m != nil {
			return "", fmt.Errorf("prompt of task %q: missing variable %q (set it with --set %s=...)", taskID, m[1], m[1])
		}
		return "", fmt.Errorf("prompt of task %q: %s", taskID, cleanError(err))
	}
	return out.String(), nil
}

// text/template reports a missing map key only in its message.
var missingKeyRE = regexp.MustCompile(`map has no entry for key "((?:[^"\\]|\\.)*)"`)

// templateRE matches the "template: prompt:3:7: " that text/template puts in
// front of its errors; the name is ours and means nothing to a user.
var templateRE = regexp.MustCompile(`^template: prompt:(\d+)(?::(\d+))?: `)

func cleanError(err error) string {
	msg := err.Error()
	if m := templateRE.FindStringSubmatch(msg); m != nil {
		loc := "line " + m[1]
		if m[2] != "" {
			loc += ", column " + m[2]
		}
		msg = loc + ": " + strings.TrimPrefix(msg[len(m[0]):], `executing "prompt" `)
	}
	return msg
}

// limitedBuffer fails writes past max bytes, which aborts the template.
type limitedBuffer struct {
	bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if b.Len()+len(p) > b.max {
		return 0, errTooLarge
	}
	return b.Buffer.Write(p)
}

// ParseSets parses repeated --set key=value flags. The value is everything
// after the first "=", so values may contain "=" themselves; a key given twice
// takes its last value, as later flags override earlier ones.
func ParseSets(sets []string) (map[string]string, error) {
	vars := make(map[string]string, len(sets))
	for _, s := range sets {
		k, v, ok := strings.Cut(s, "=")
		if !ok {
			return nil, fmt.Errorf("--set %q: expected key=value", s)
		}
		k = strings.TrimSpace(k)
		if k == "" {
			return nil, fmt.Errorf("--set %q: the key before \"=\" is empty", s)
		}
		vars[k] = v
	}
	return vars, nil
}
