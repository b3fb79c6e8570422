package workflow

import "slices"

// fake is the adapter registry of the tests.
type fake struct{}

var fakeNames = []string{"claude", "codex", "gemini", "opencode", "shell"}

func (fake) Has(name string) bool { return slices.Contains(fakeNames, name) }
func (fake) Names() []string      { return fakeNames }
