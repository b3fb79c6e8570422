package schema

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"

	"github.com/vibeteam/vibeteam/adapters"
	"github.com/vibeteam/vibeteam/core/vocab"
	"github.com/vibeteam/vibeteam/core/workflow"
	"github.com/vibeteam/vibeteam/handlers"
)

// compile compiles schema name with a real JSON Schema validator, as an
// editor would load it.
func compile(t *testing.T, name string) *jsonschema.Schema {
	t.Helper()
	data, ok := Get(name)
	if !ok {
		t.Fatalf("no schema %q", name)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s.schema.json is not JSON: %v", name, err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	url := name + ".schema.json"
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(url)
	if err != nil {
		t.Fatalf("%s.schema.json does not compile: %v", name, err)
	}
	return s
}

// instance turns a YAML (or JSON) file into the JSON value an editor
// validates: anchors, aliases and merge keys expanded.
func instance(t *testing.T, file string, data []byte) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return inst
}

type fixture struct {
	file string
	data []byte
}

func fixtures(t *testing.T, pattern string) []fixture {
	t.Helper()
	var out []fixture
	for _, glob := range []string{pattern + ".yaml", pattern + ".yml", pattern + ".json"} {
		paths, err := filepath.Glob(glob)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range paths {
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, fixture{p, data})
		}
	}
	if len(out) == 0 {
		t.Fatalf("no files match %s", pattern)
	}
	return out
}

// loadWorkflow is what vibeteam makes of a workflow file, with the built-in
// adapters registered.
func loadWorkflow(f fixture) error {
	_, err := workflow.Parse(f.data, f.file, workflow.LoadOptions{Adapters: adapters.NewRegistry()})
	return err
}

func loadAdapter(f fixture) error {
	_, err := adapters.Parse(f.file, f.data)
	return err
}

// The schemas agree with the loaders on every fixture: what vibeteam
// accepts, an editor accepts, and what the fixture calls invalid, both
// refuse. The shipped files (built-in adapters, the demo workflow, the
// built-in grimoires), core/workflow's grimoire fixtures and the README's
// examples are held to it too.
func TestSchemasAgreeWithTheLoaders(t *testing.T) {
	readme := readmeBlocks(t)
	for _, c := range []struct {
		schema  string
		load    func(fixture) error
		valid   [][]fixture
		invalid []fixture
	}{
		{"workflow", loadWorkflow,
			[][]fixture{fixtures(t, "../testdata/workflows/valid/*"), fixtures(t, "../builtin/workflows/*"),
				fixtures(t, "../builtin/grimoires/*"), fixtures(t, "../core/workflow/testdata/grimoires/every-key"),
				fixtures(t, "../core/workflow/testdata/grimoires/minimal"), readme["workflow"]},
			slices.Concat(fixtures(t, "../testdata/workflows/invalid/*"), fixtures(t, "../core/workflow/testdata/grimoires/many-errors"))},
		{"adapter", loadAdapter,
			[][]fixture{fixtures(t, "../testdata/adapters/valid/*"), fixtures(t, "../adapters/builtin/*"), fixtures(t, "../examples/adapters/*"), readme["adapter"]},
			fixtures(t, "../testdata/adapters/invalid/*")},
	} {
		t.Run(c.schema, func(t *testing.T) {
			s := compile(t, c.schema)
			for _, f := range slices.Concat(c.valid...) {
				if err := s.Validate(instance(t, f.file, f.data)); err != nil {
					t.Errorf("%s is valid, but the schema refuses it: %v", f.file, err)
				}
				if err := c.load(f); err != nil {
					t.Errorf("%s is meant to be valid: %v", f.file, err)
				}
			}
			for _, f := range c.invalid {
				if err := s.Validate(instance(t, f.file, f.data)); err == nil {
					t.Errorf("%s is invalid, but the schema accepts it", f.file)
				}
				if err := c.load(f); err == nil {
					t.Errorf("%s is meant to be invalid, but vibeteam loads it", f.file)
				}
			}
		})
	}
}

// readmeBlocks returns the README's example files: the yaml blocks whose
// first line names a workflow (# NAME.yaml) or an adapter file
// (# .vibeteam/adapters/NAME.yaml).
func readmeBlocks(t *testing.T) map[string][]fixture {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]fixture{}
	re := regexp.MustCompile("(?s)```yaml\n# ([^\n]+\\.yaml)[^\n]*\n(.*?)```")
	for _, m := range re.FindAllSubmatch(b, -1) {
		name := string(m[1])
		if strings.HasSuffix(name, "config.yaml") || strings.HasSuffix(name, "grimoire-matchers.yaml") {
			continue // the project's settings, tested by core/beads
		}
		kind := "workflow"
		if strings.HasPrefix(name, ".vibeteam/adapters/") {
			kind = "adapter"
		}
		out[kind] = append(out[kind], fixture{"README.md: " + name, m[2]})
	}
	if len(out["workflow"]) == 0 || len(out["adapter"]) == 0 {
		t.Fatalf("the README shows no workflow or no adapter file: %v", out)
	}
	return out
}

// Every standard handler can be named in `use:` without the editor
// complaining.
func TestAdapterSchemaKnowsEveryHandler(t *testing.T) {
	s := compile(t, "adapter")
	for _, name := range handlers.Names() {
		use := name
		switch name {
		case "select":
			use = "select:2"
		case "type":
			use = "type:yes"
		case "choose":
			use = "choose:Yes, I trust this folder"
		}
		doc := "command: x\nmodes: { interactive: {} }\nautoPolicy: { handlers: [{ when: x, use: '" + use + "' }] }\n"
		if err := s.Validate(instance(t, use, []byte(doc))); err != nil {
			t.Errorf("use: %s: %v", use, err)
		}
	}
}

// The workflow schema offers the step types the loader has, and refuses
// the names it reserves, as they are spelled in core/workflow.
func TestWorkflowSchemaKnowsTheLoadersWords(t *testing.T) {
	data, _ := Get("workflow")
	var doc struct {
		Definitions struct {
			Step struct {
				Properties struct {
					Type struct {
						Enum []string `json:"enum"`
					} `json:"type"`
				} `json:"properties"`
			} `json:"step"`
			ReservedName struct {
				Enum []string `json:"enum"`
			} `json:"reservedName"`
		} `json:"definitions"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if got := doc.Definitions.Step.Properties.Type.Enum; !slices.Equal(got, vocab.Strings(workflow.StepTypes)) {
		t.Errorf("step types: schema %v, loader %v", got, workflow.StepTypes)
	}
	if got := doc.Definitions.ReservedName.Enum; !slices.Equal(got, workflow.ReservedNames) {
		t.Errorf("reserved names: schema %v, loader %v", got, workflow.ReservedNames)
	}
}

func TestNames(t *testing.T) {
	if got := Names(); !slices.Equal(got, []string{"adapter", "workflow"}) {
		t.Errorf("Names() = %v", got)
	}
	if _, ok := Get("nope"); ok {
		t.Error("Get(nope) found something")
	}
}
