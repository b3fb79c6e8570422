package cli

import "github.com/vibeteam/vibeteam/ui"

// safe and safeLine are the UI's ui.Safe and ui.SafeLine under the short
// names every command prints outside text with (a workflow's, a session's
// or an agent's: it must never drive the terminal).
func safe[S ~string](text S) string { return ui.Safe(text) }

func safeLine(s string) string { return ui.SafeLine(s) }
