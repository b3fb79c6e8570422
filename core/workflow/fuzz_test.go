package workflow

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/vibeteam/vibeteam/internal/yamlnode"
)

// FuzzParse checks that no input makes Parse panic, that what Parse accepts
// Validate accepts too, and that a JSON file is held to the JSON grammar with
// every problem placed inside the file.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.*")
	grimoires, _ := filepath.Glob("testdata/grimoires/*.*")
	files = append(files, grimoires...)
	for _, p := range files {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data, filepath.Ext(p) == ".json")
		}
	}
	for _, s := range []string{
		head + "        adapter: claude\n",
		head + "        adapter: claude\n        timeout: 1.5\n        env: {A: \"1\"}\n        extraArgs: [a]\n",
		"id: wf\nstages:\n  - &s {id: s, tasks: [&t {id: a, adapter: claude}, {<<: *t, id: b}]}\n",
		"a: &x {<<: *x}\n",
		"steps: []\n",
		"name: g\nsteps:\n  - {name: a, type: script, command: x, on_success: exit_loop}\n",
		"name: g\nsteps:\n  - name: l\n    type: loop\n    steps: [&s {name: a, type: agent, spell: x, input: {a: b}}, {<<: *s, name: b}]\n",
		"name: g\nsteps:\n  - {name: s, type: stage, output: o, tasks: [{id: a, adapter: claude}]}\n  - {name: o, type: merge}\n",
		"- 1\n",
		"",
		`{"id": "wf", "stages": [{"id": "s", "tasks": [{"id": "a", "adapter": "claude", "prompt": "a\/b \ud83d\ude00"}]}]}`,
		`{"id":"x", }`,
		"{\n  \"id\": \"x\",\n",
	} {
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, data []byte, force bool) {
		opts := LoadOptions{Adapters: fake{}, ForceHeadless: force}
		// YAML, JSON, and a name that leaves the choice to the content.
		for _, file := range []string{"fuzz.yaml", "fuzz.json", "fuzz"} {
			def, err := Parse(data, file, opts)
			if err != nil {
				var list ErrorList
				if def != nil || !errors.As(err, &list) || len(list) == 0 {
					t.Fatalf("%s: Parse = %v, %T %v", file, def, err, err)
				}
				for _, e := range list {
					if e.Msg == "" {
						t.Fatalf("%s: error without a message: %#v", file, e)
					}
				}
				if file == "fuzz.json" {
					checkJSONErrors(t, data, list)
				}
				continue
			}
			if def == nil {
				t.Fatalf("%s: no definition and no error", file)
			}
			if file == "fuzz.json" && !json.Valid(bytes.TrimPrefix(data, utf8BOM)) {
				t.Fatalf("%s: Parse accepted invalid JSON", file)
			}
			if errs := Validate(def, opts); errs != nil {
				t.Fatalf("%s: Parse accepted what Validate rejects: %v", file, errs)
			}
		}
	})
}

// checkJSONErrors checks that every problem of a JSON file has a position
// inside the file, and that valid JSON is not called invalid.
func checkJSONErrors(t *testing.T, data []byte, list ErrorList) {
	t.Helper()
	last, _ := yamlnode.NewLineCounter(data).Pos(len(data))
	valid := json.Valid(bytes.TrimPrefix(data, utf8BOM)) && utf8.Valid(data)
	for _, e := range list {
		if e.Pos.Line < 1 || e.Pos.Line > last || e.Pos.Col < 1 {
			t.Fatalf("error at %d:%d, outside the %d lines of the file: %v", e.Pos.Line, e.Pos.Col, last, e)
		}
		if valid && strings.HasPrefix(e.Msg, "invalid JSON") {
			t.Fatalf("valid JSON refused: %v", e)
		}
	}
}

// BenchmarkValidate500 parses and validates a 500-task workflow (50 stages of
// 10 tasks), well past any real one.
func BenchmarkValidate500(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("id: big\ngoal: benchmark\nstages:\n")
	for s := range 50 {
		fmt.Fprintf(&sb, "  - id: stage-%d\n    tasks:\n", s)
		for t := range 10 {
			fmt.Fprintf(&sb, "      - id: task-%d-%d\n        adapter: %s\n        executionMode: headless\n"+
				"        prompt: Do part %d of stage %d\n        extraArgs: [--model, opus]\n"+
				"        env: {STAGE: \"%d\"}\n        timeout: 10m\n",
				s, t, fakeNames[t%len(fakeNames)], t, s, s)
		}
	}
	data := []byte(sb.String())
	opts := LoadOptions{Adapters: fake{}}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		def, err := Parse(data, "big.yaml", opts)
		if err != nil {
			b.Fatal(err)
		}
		if errs := Validate(def, opts); errs != nil {
			b.Fatal(errs)
		}
	}
}
