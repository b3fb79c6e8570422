package workflow

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParse checks that no input makes Parse panic, and that what Parse
// accepts Validate accepts too.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.*")
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
		"- 1\n",
		"",
	} {
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, data []byte, force bool) {
		opts := LoadOptions{Adapters: fake{}, ForceHeadless: force}
		def, err := Parse(data, "fuzz.yaml", opts)
		if err != nil {
			var list ErrorList
			if def != nil || !errors.As(err, &list) || len(list) == 0 {
				t.Fatalf("Parse = %v, %T %v", def, err, err)
			}
			for _, e := range list {
				if e.Msg == "" {
					t.Fatalf("error without a message: %#v", e)
				}
			}
			return
		}
		if def == nil {
			t.Fatal("no definition and no error")
		}
		if errs := Validate(def, opts); errs != nil {
			t.Fatalf("Parse accepted what Validate rejects: %v", errs)
		}
	})
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
