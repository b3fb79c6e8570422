package builtin

import (
	"embed"
	"io/fs"
)

// The spells and the system prompt of agent steps. The system prompt states
// the output contract every agent step is held to, so it ships with the
// binary rather than with a project.
//
//go:embed spells/*.md
var spells embed.FS

//go:embed system-prompt.md
var systemPrompt string

// Spells holds the built-in spells by file name ("implement.md"); a
// project's .vibeteam/spells/ and .coven/spells/ come before them.
func Spells() fs.FS {
	sub, err := fs.Sub(spells, "spells")
	if err != nil {
		panic(err) // the embed pattern guarantees the folder
	}
	return sub
}

// SystemPrompt is the built-in system prompt that wraps every agent prompt
// (the spell goes where it says {{.spell_content}}).
func SystemPrompt() string { return systemPrompt }
