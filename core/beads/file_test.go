package beads

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestReadFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	want := Bead{"id": "bd-1", "title": "T", "priority": float64(2), "labels": []any{"grimoire:x"}, "custom": map[string]any{"k": "v"}}
	for name, text := range map[string]string{
		"object.json": `{"id":"bd-1","title":"T","priority":2,"labels":["grimoire:x"],"custom":{"k":"v"}}`,
		"array.json":  ` [ {"id":"bd-1","title":"T","priority":2,"labels":["grimoire:x"],"custom":{"k":"v"}} ]` + "\n",
	} {
		b, err := ReadFile(write(name, text))
		if err != nil || !reflect.DeepEqual(b, want) {
			t.Errorf("%s: %v, %v", name, b, err)
		}
	}
	for name, c := range map[string]struct{ text, want string }{
		"empty.json":   {"  \n", "is empty"},
		"none.json":    {"[]", "is an empty array; want one bead"},
		"two.json":     {`[{"id":"a"},{"id":"b"}]`, "is an array of 2 beads; want one"},
		"string.json":  {`["bd-1"]`, "the array holds a string, not an object"},
		"number.json":  {`12`, "is a number, not an object"},
		"bad.json":     {"{\n  \"id\": \"bd-1\",\n  \"title\" \"T\"\n}", "not valid JSON: line 3, column 11"},
		"short.json":   {`{"id": "bd-1"`, "not valid JSON"},
		"twice.json":   {`{"id":"a"} {"id":"b"}`, "holds more than one JSON value"},
		"missing.json": {"", ""},
	} {
		p := filepath.Join(dir, name)
		if name != "missing.json" {
			write(name, c.text)
		}
		_, err := ReadFile(p)
		if err == nil || !strings.HasPrefix(err.Error(), "bead file "+p+": ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
	if _, err := ReadFile(dir); err == nil || !strings.Contains(err.Error(), dir) {
		t.Errorf("a directory: %v", err)
	}
}
