// Package schema holds the JSON Schemas of vibeteam's file formats, for
// editors (yaml-language-server, VS Code) to validate and complete workflow
// and adapter files. `vibeteam schema NAME` prints them.
//
// The schemas describe what the loaders accept, as far as a schema can:
// vibeteam validate also checks what needs more than one file's structure
// (unique ids, registered adapters, prompt variables, regular expressions).
// The tests hold the schemas to the loaders with the fixtures of testdata/.
package schema

import (
	"embed"
	"sort"
	"strings"
)

//go:embed *.schema.json
var files embed.FS

// Get returns the schema called name ("workflow", "adapter").
func Get(name string) ([]byte, bool) {
	data, err := files.ReadFile(name + ".schema.json")
	return data, err == nil
}

// Names lists the schemas, sorted.
func Names() []string {
	ents, _ := files.ReadDir(".")
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		names = append(names, strings.TrimSuffix(e.Name(), ".schema.json"))
	}
	sort.Strings(names)
	return names
}
