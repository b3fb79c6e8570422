package taskrun

import "testing"

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
