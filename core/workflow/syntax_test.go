package workflow

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// jsonTask is a JSON workflow whose only task goes on with fields, which
// start at line 2, column 3.
func jsonTask(fields string) string {
	return `{"id": "wf", "stages": [{"id": "s", "tasks": [{"id": "a", "adapter": "claude",` + "\n  " + fields + "}]}]}\n"
}

func TestParseJSONSyntax(t *testing.T) {
	longKey := strings.Repeat("k", 2000)
	tests := []struct {
		name  string
		file  string // default wf.json
		src   string
		want  []string
		check func(t *testing.T, task Task)
	}{
		// valid JSON that yaml.v3 refused
		{name: "escaped slash", src: jsonTask(`"prompt": "a\/b"`), check: func(t *testing.T, task Task) {
			if task.Prompt != "a/b" {
				t.Errorf("Prompt = %q", task.Prompt)
			}
		}},
		{name: "surrogate pair", src: jsonTask(`"prompt": "\ud83d\ude00 \u00e9\n"`), check: func(t *testing.T, task Task) {
			if task.Prompt != "😀 é\n" {
				t.Errorf("Prompt = %q", task.Prompt)
			}
		}},
		{name: "key of 2000 characters", src: jsonTask(`"` + longKey + `": 1`),
			want: []string{`wf.json:2:3: stages[0].tasks[0]: unknown key "` + longKey + `" (known: id, adapter, executionMode, prompt, extraArgs, cwd, env, name, pendingInputs, keepAlive, timeout, inactivityTimeout, mcp, sandbox)`}},
		{name: "byte order mark", src: "\ufeff" + jsonTask(`"promt": "x"`),
			want: []string{`wf.json:2:3: stages[0].tasks[0]: unknown key "promt" (did you mean "prompt"?)`}},
		{name: "crlf", src: strings.ReplaceAll(jsonTask(`"promt": "x"`), "\n", "\r\n"),
			want: []string{`wf.json:2:3: stages[0].tasks[0]: unknown key "promt" (did you mean "prompt"?)`}},
		{name: "columns count characters", src: "{\"id\": \"é€😀\", \"x\": 1, \"stages\": []}",
			want: []string{
				`wf.json:1:15: unknown key "x" (known: id, goal, stages, mcp, secrets, sandbox)`,
				`wf.json:1:33: stages: a workflow needs at least one stage`,
			}},
		{name: "upper-case extension", file: "WF.JSON", src: jsonTask(`"prompt": "a\/b"`)},
		{name: "unknown extension starting with a brace is JSON", file: "wf", src: jsonTask(`"prompt": "a\/b"`)},
		{name: "unknown extension starting with a brace may be YAML", file: "wf.txt",
			src: "{id: wf, stages: [{id: s, tasks: [{id: a, adapter: claude}]}]}\n"},

		// invalid JSON that yaml.v3 accepted
		{name: "trailing comma in an object", file: "j.json", src: `{"id":"x", }`,
			want: []string{`j.json:1:12: invalid JSON: invalid character '}' looking for beginning of object key string`}},
		{name: "trailing comma in a list", src: jsonTask(`"extraArgs": ["a",]`),
			want: []string{`wf.json:2:21: invalid JSON: invalid character ']' looking for beginning of value`}},
		{name: "single quotes", src: jsonTask(`"prompt": 'x'`),
			want: []string{`wf.json:2:13: invalid JSON: invalid character '\'' looking for beginning of value`}},
		{name: "comment", src: "// a workflow\n" + jsonTask(""),
			want: []string{`wf.json:1:1: invalid JSON: invalid character '/' looking for beginning of value`}},

		// syntax errors, placed
		{name: "missing comma", file: "j4.json", src: `{"id": "x" "stages": []}`,
			want: []string{`j4.json:1:12: invalid JSON: invalid character '"' after object key:value pair`}},
		{name: "unexpected end", src: "{\n  \"id\": \"x\",\n",
			want: []string{`wf.json:3:1: invalid JSON: unexpected end of JSON input`}},
		{name: "unexpected end without a line break", src: "{\n  \"id\": \"x\",",
			want: []string{`wf.json:2:13: invalid JSON: unexpected end of JSON input`}},
		{name: "text after the value", src: `{"id": "wf"}` + "\nx\n",
			want: []string{`wf.json:2:1: invalid JSON: invalid character 'x' after top-level value`}},
		{name: "two values", src: `{"id": "wf"} {}`,
			want: []string{`wf.json:1:14: invalid JSON: invalid character '{' after top-level value`}},
		{name: "tab in a string", src: jsonTask("\"prompt\": \"a\tb\""),
			want: []string{`wf.json:2:15: invalid JSON: invalid character '\t' in string literal`}},
		{name: "bad escape", src: jsonTask(`"prompt": "a\qb"`),
			want: []string{`wf.json:2:16: invalid JSON: invalid character 'q' in string escape code`}},
		{name: "invalid UTF-8", src: jsonTask("\"prompt\": \"caf\xe9\""),
			want: []string{`wf.json:2:17: invalid JSON: invalid UTF-8 (byte 0xe9)`}},
		{name: "too deep", src: `{"id": "wf", "x": ` + strings.Repeat("[", 10001),
			want: []string{`wf.json:1:10018: invalid JSON: invalid character '[' exceeded max depth`}},
		{name: "empty", src: "", want: []string{`wf.json:1:1: file is empty`}},
		{name: "blank", src: " \n\t\r\n", want: []string{`wf.json:1:1: file is empty`}},
		{name: "unknown extension, neither JSON nor YAML", file: "wf", src: `{"id": "wf",, }`,
			want: []string{`wf:1:13: invalid JSON: invalid character ',' looking for beginning of object key string`}},

		// checks, as for YAML
		{name: "duplicate key", src: jsonTask(`"adapter": "codex"`),
			want: []string{`wf.json:2:3: stages[0].tasks[0]: duplicate key "adapter" (first defined at line 1)`}},
		{name: "top level is a list", src: "[{\"id\": \"wf\"}]",
			want: []string{`wf.json:1:1: the top level must be a mapping with "id" and "stages"`}},
		{name: "top level is null", src: "null",
			want: []string{`wf.json:1:1: the top level must be a mapping with "id" and "stages"`}},
		{name: "wrong types", src: jsonTask(`"keepAlive": "true", "extraArgs": ["a", 1.5, null, false], "env": {"A": 1e400}`),
			want: []string{
				`wf.json:2:16: stages[0].tasks[0].keepAlive: must be true or false`,
				`wf.json:2:43: stages[0].tasks[0].extraArgs[1]: must be a string (write "1.5" in quotes)`,
				`wf.json:2:48: stages[0].tasks[0].extraArgs[2]: must be a string`,
				`wf.json:2:54: stages[0].tasks[0].extraArgs[3]: must be a string (write "false" in quotes)`,
				`wf.json:2:75: stages[0].tasks[0].env.A: must be a string (write "1e400" in quotes)`,
			}},
		{name: "numbers", src: jsonTask(`"timeout": 1.5e2, "keepAlive": true, "name": 7, "cwd": null`), check: func(t *testing.T, task Task) {
			if task.Timeout != Duration(150e9) || !task.KeepAlive || task.Name != "7" || task.Cwd != "" {
				t.Errorf("task = %+v", task)
			}
		}},
		{name: "timeout out of range", src: jsonTask(`"timeout": 123456789012345678901234`),
			want: []string{`wf.json:2:14: stages[0].tasks[0].timeout: number of seconds is out of range`}},
		{name: "timeout beyond float64", src: jsonTask(`"timeout": -1e400`),
			want: []string{`wf.json:2:14: stages[0].tasks[0].timeout: must be a duration like "10m" or a number of seconds`}},
		{name: "quoted merge key is a plain key", src: jsonTask(`"<<": {"prompt": "x"}`),
			want: []string{`wf.json:2:3: stages[0].tasks[0]: unknown key "<<" (known: id, adapter, executionMode, prompt, extraArgs, cwd, env, name, pendingInputs, keepAlive, timeout, inactivityTimeout, mcp, sandbox)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := tt.file
			if file == "" {
				file = "wf.json"
			}
			def, err := Parse([]byte(tt.src), file, defaultOpts())
			if got := errLines(err); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("errors:\n got: %.300q\nwant: %.300q", got, tt.want)
			}
			if err == nil && tt.check != nil {
				tt.check(t, def.Steps[0].Tasks[0])
			}
		})
	}
}

// TestJSONNodesMatchYAML parses JSON that yaml.v3 reads correctly both ways:
// the trees, positions included, must be the same, so that every message
// points where it did when JSON was read as YAML.
func TestJSONNodesMatchYAML(t *testing.T) {
	inputs := map[string]string{
		"scalars":  `{"s": "x", "i": -12, "f": 1.5e-3, "z": 0, "t": true, "n": null, "e": "", "u": "é€😀"}`,
		"nesting":  "[\n\t[],\n\t{},\n\t[{\"a\": [1, {\"b\": \"c\"}]}],\n\t\"x\"  ,  \"y\"\n]\n",
		"spacing":  "  {  \"a\"  :  1  ,\r\n  \"b\":[ 2 ,3 ] }  \n\n",
		"unicode":  `{"é": "€", "😀": ["ü", 1], "k": "\u00e9"}`,
		"top list": `[1, "a"]`,
	}
	files, _ := filepath.Glob("testdata/*.json")
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		inputs[f] = string(data)
	}
	for name, src := range inputs {
		t.Run(name, func(t *testing.T) {
			got, errs := decodeJSON([]byte(src), "x.json")
			if errs != nil {
				t.Fatalf("decodeJSON: %v", errs)
			}
			var doc yaml.Node
			if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
				t.Fatalf("yaml: %v", err)
			}
			sameNode(t, "$", got, doc.Content[0])
		})
	}
}

func sameNode(t *testing.T, path string, got, want *yaml.Node) {
	t.Helper()
	if got.Kind != want.Kind || got.ShortTag() != want.ShortTag() || got.Value != want.Value ||
		got.Style != want.Style || got.Line != want.Line || got.Column != want.Column ||
		len(got.Content) != len(want.Content) {
		t.Fatalf("%s:\n got: kind %v tag %s style %v %q at %d:%d, %d children\nwant: kind %v tag %s style %v %q at %d:%d, %d children",
			path, got.Kind, got.ShortTag(), got.Style, got.Value, got.Line, got.Column, len(got.Content),
			want.Kind, want.ShortTag(), want.Style, want.Value, want.Line, want.Column, len(want.Content))
	}
	for i := range got.Content {
		sameNode(t, path+"/"+want.Content[i].Value, got.Content[i], want.Content[i])
	}
}

func TestParseYAMLSyntaxPositions(t *testing.T) {
	tests := []struct {
		name, src string
		want      string
	}{
		// yaml.v3 gives no line for a problem on the first line
		{"scanner error on line 1", "a: b: c\n", `wf.yaml:1: invalid YAML: mapping values are not allowed in this context`},
		{"bad escape on line 1", `a: "\q"` + "\n", `wf.yaml:1: invalid YAML: found unknown escape character`},
		{"bad escape on line 2", "a: 1\n" + `b: "\q"` + "\n", `wf.yaml:2: invalid YAML: found unknown escape character`},
		// and counts the lines of parser errors from 0
		{"parser error", "a: 1\n- b\n", `wf.yaml:2: invalid YAML: did not find expected key`},
		{"unclosed flow list", "id: wf\nstages: [a, b\nx: 1\n", `wf.yaml:2: invalid YAML: did not find expected ',' or ']'`},
		{"unclosed flow mapping at the end", "{a: 1", `wf.yaml:1: invalid YAML: did not find expected ',' or '}'`},
		// yaml.v3's reader gives no position at all
		{"control character", "id: wf\ngoal: a\x01\n", `wf.yaml:2:8: invalid YAML: control characters are not allowed`},
		{"escape character", "id: wf\r\ngoal: \x1b[0m\r\n", `wf.yaml:2:7: invalid YAML: control characters are not allowed`},
		{"delete after a wide character", "id: wf\ngoal: é\x7f\n", `wf.yaml:2:8: invalid YAML: control characters are not allowed`},
		{"C1 control", "id: wf\ngoal: \u0080\n", `wf.yaml:2:7: invalid YAML: control characters are not allowed`},
		{"control character after a byte order mark", "\ufeffid: \x01\n", `wf.yaml:1:5: invalid YAML: control characters are not allowed`},
		{"invalid UTF-8", "id: wf\ngoal: \"caf\xe9\"\n", `wf.yaml:2:11: invalid YAML: invalid trailing UTF-8 octet`},
		{"invalid leading byte", "id: wf\n\n  # \xff\n", `wf.yaml:3:5: invalid YAML: invalid leading UTF-8 octet`},
		{"UTF-8 cut at the end", "id: wf\ngoal: x\xe2\x82", `wf.yaml:2:8: invalid YAML: incomplete UTF-8 octet sequence`},
		{"surrogate", "id: wf\ngoal: \xed\xa0\x80\n", `wf.yaml:2:7: invalid YAML: invalid Unicode character`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.src), "wf.yaml", defaultOpts())
			if got := errLines(err); !reflect.DeepEqual(got, []string{tt.want}) {
				t.Errorf("errors:\n got: %q\nwant: %q", got, tt.want)
			}
		})
	}
}
