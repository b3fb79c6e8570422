package engine

import (
	"strings"
	"testing"

	"github.com/vibeteam/vibeteam/core/workflow"
)

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
