package engine

import (
	"strings"
	"testing"

	"github.com/vibeteam/vibeteam/core/workflow"
)

func TestExcerptCollapsesBlankRuns(t *testing.T) {
	screen := "\n\ntitle\n\nreply: one\nreply: two\n\n\n\n\n╭──╮\n│ >\n╰──╯\n  ? for shortcuts\n"
	got := Excerpt(screen, 6)
	want := "reply: one\nreply: two\n\n╭──╮\n│ >\n╰──╯\n  ? for shortcuts"
	if got != strings.Join(strings.Split(want, "\n")[len(strings.Split(want, "\n"))-6:], "\n") {
		t.Errorf("excerpt:\n%s", got)
	}
	if Excerpt("", 5) != "" {
		t.Error("excerpt of an empty screen")
	}
}

func TestStateKinds(t *testing.T) {
	for name, kind := range map[string]string{
		"":                       "",
		"interaction_idle":       "idle",
		"interaction_permission": "prompt",
		"working":                "working",
		"thinking":               "working",
	} {
		if got := stateKind(name); got != kind {
			t.Errorf("stateKind(%q) = %q, want %q", name, got, kind)
		}
	}
}

func TestRenderPromptsReportsEveryMissingVariable(t *testing.T) {
	def := &workflow.Definition{ID: "x", Goal: "g", Steps: []workflow.Step{{Type: workflow.StepStage, ID: "s", Tasks: []workflow.Task{
		{ID: "a", Prompt: "{{.one}} for {{.goal}}"},
		{ID: "b", Prompt: "{{.two}}"},
		{ID: "c", Prompt: "plain"},
	}}}}
	_, err := RenderPrompts(def, nil)
	if err == nil || !strings.Contains(err.Error(), `"one"`) || !strings.Contains(err.Error(), `"two"`) {
		t.Fatalf("err = %v", err)
	}
	got, err := RenderPrompts(def, map[string]string{"one": "1", "two": "2"})
	if err != nil || got["a"] != "1 for g" || got["b"] != "2" || got["c"] != "plain" {
		t.Errorf("rendered %v, %v", got, err)
	}
}
