// Package builtin holds the workflows shipped inside the binary: stage
// workflows such as the demo a newcomer runs first, and grimoires.
package builtin

import (
	"embed"
	"path"
	"sort"
	"strings"
)

//go:embed workflows/*.yaml grimoires/*.yaml
var files embed.FS

// dirs hold the built-ins, searched in this order. A name is in one of them
// only (a test checks), so the order never decides anything.
var dirs = []string{"workflows", "grimoires"}

// Workflow returns the source of the built-in workflow or grimoire name and
// the pseudo-path used in error messages. The file's own content says which
// kind it is.
func Workflow(name string) (data []byte, source string, ok bool) {
	if !validName(name) {
		return nil, "", false
	}
	for _, d := range dirs {
		if data, err := files.ReadFile(path.Join(d, name+".yaml")); err == nil {
			return data, "builtin:" + name + ".yaml", true
		}
	}
	return nil, "", false
}

// Grimoire is Workflow limited to the built-in grimoires.
func Grimoire(name string) (data []byte, source string, ok bool) {
	if !validName(name) {
		return nil, "", false
	}
	data, err := files.ReadFile(path.Join("grimoires", name+".yaml"))
	if err != nil {
		return nil, "", false
	}
	return data, "builtin:" + name + ".yaml", true
}

// WorkflowNames lists every built-in, stage workflows and grimoires, sorted.
func WorkflowNames() []string {
	var names []string
	for _, d := range dirs {
		names = append(names, namesIn(d)...)
	}
	sort.Strings(names)
	return names
}

// GrimoireNames lists the built-in grimoires, sorted.
func GrimoireNames() []string { return namesIn("grimoires") }

func namesIn(dir string) []string {
	entries, _ := files.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	sort.Strings(names)
	return names
}

// validName keeps a name from reaching another directory of the embedded
// tree ("x/../demo" would be cleaned to "demo").
func validName(name string) bool {
	return name != "" && !strings.ContainsAny(name, `/\`) && !strings.HasPrefix(name, ".")
}
