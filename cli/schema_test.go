package cli

import (
	"strings"
	"testing"

	"github.com/vibeteam/vibeteam/schema"
)

func TestSchemaCommand(t *testing.T) {
	p := newProject(t)
	for _, name := range []string{"workflow", "adapter"} {
		r := p.run("schema", name)
		wantCode(t, r, 0)
		want, _ := schema.Get(name)
		if r.stdout != string(want) {
			t.Errorf("schema %s does not print schema/%s.schema.json", name, name)
		}
	}
	for _, args := range [][]string{{"schema"}, {"schema", "grimoire"}, {"schema", "workflow", "adapter"}} {
		r := p.run(args...)
		wantCode(t, r, 2)
		if !strings.Contains(r.stderr, "workflow or adapter") && !strings.Contains(r.stderr, "adapter or workflow") {
			t.Errorf("%v: %s", args, r.stderr)
		}
	}
}
