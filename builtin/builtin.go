// Package builtin holds the workflows shipped inside the binary, such as the
// demo a newcomer runs first.
package builtin

import (
	"embed"
	"path"
	"sort"
	"strings"
)

//go:embed workflows/*.yaml
var workflows embed.FS

// Workflow returns the source of the built-in workflow name and the
// pseudo-path used in error messages.
func Workflow(name string) (data []byte, source string, ok bool) {
	p := path.Join("workflows", name+".yaml")
	data, err := workflows.ReadFile(p)
	if err != nil {
		return nil, "", false
	}
	return data, "builtin:" + name + ".yaml", true
}

// WorkflowNames lists the built-in workflows.
func WorkflowNames() []string {
	entries, _ := workflows.ReadDir("workflows")
	var names []string
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	sort.Strings(names)
	return names
}
