package builtin_test

import (
	"slices"
	"testing"

	"github.com/vibeteam/vibeteam/adapters"
	"github.com/vibeteam/vibeteam/builtin"
	"github.com/vibeteam/vibeteam/core/workflow"
)

// Every built-in loads as what its folder says it is, with the built-in
// adapters, and a name is in one folder only.
func TestBuiltinsLoad(t *testing.T) {
	grimoires := builtin.GrimoireNames()
	if len(grimoires) == 0 {
		t.Fatal("no built-in grimoires")
	}
	names := builtin.WorkflowNames()
	if !slices.IsSorted(names) || len(slices.Compact(slices.Clone(names))) != len(names) {
		t.Errorf("WorkflowNames = %q: want sorted, each once", names)
	}
	for _, name := range names {
		data, src, ok := builtin.Workflow(name)
		if !ok || src != "builtin:"+name+".yaml" {
			t.Fatalf("Workflow(%q) = %v, %q", name, ok, src)
		}
		def, err := workflow.Parse(data, src, workflow.LoadOptions{Adapters: adapters.NewRegistry()})
		if err != nil {
			t.Errorf("%s: %v", src, err)
			continue
		}
		wantKind := workflow.KindStages
		if slices.Contains(grimoires, name) {
			wantKind = workflow.KindGrimoire
			if _, _, ok := builtin.Grimoire(name); !ok {
				t.Errorf("Grimoire(%q) not found", name)
			}
		}
		if def.Kind != wantKind || def.ID != name {
			t.Errorf("%s: kind %q, name %q; want %q, %q", src, def.Kind, def.ID, wantKind, name)
		}
	}
	for _, bad := range []string{"", "../builtin", "grimoires/../workflows/demo", ".hidden", "nope"} {
		if _, _, ok := builtin.Workflow(bad); ok {
			t.Errorf("Workflow(%q) found something", bad)
		}
	}
	if _, _, ok := builtin.Grimoire("demo"); ok {
		t.Error(`Grimoire("demo") found the stage workflow`)
	}
}
