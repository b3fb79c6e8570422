package yamlnode

import (
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// value parses "v: SRC" and returns the walker and the node of v.
func value(t *testing.T, src string) (*Walker, *yaml.Node) {
	t.Helper()
	data := "v: " + src + "\n"
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(data), &doc); err != nil {
		t.Fatalf("%q: %v", src, err)
	}
	return NewWalker("f.yaml", len(data)), doc.Content[0].Content[1]
}

// errs is every problem w reported, one per line, without the file name.
func errs(w *Walker) string {
	lines := make([]string, len(w.Errs))
	for i, e := range w.Errs {
		lines[i] = strings.TrimPrefix(e.Error(), "f.yaml:")
	}
	return strings.Join(lines, "\n")
}

func TestScalarReaders(t *testing.T) {
	type read func(w *Walker, n *yaml.Node) (any, bool)
	text := func(w *Walker, n *yaml.Node) (any, bool) { return w.Text(n, "v") }
	str := func(w *Walker, n *yaml.Node) (any, bool) { return w.String(n, "v") }
	boolean := func(w *Walker, n *yaml.Node) (any, bool) { return w.Bool(n, "v") }
	count := func(w *Walker, n *yaml.Node) (any, bool) { return w.Int(n, "v", 1, math.MaxInt) }
	size := func(w *Walker, n *yaml.Node) (any, bool) { return w.Int(n, "v", 1, 100) }
	timeout := func(w *Walker, n *yaml.Node) (any, bool) { return w.Duration(n, "v", DurationSpec{Seconds: true}) }
	period := func(w *Walker, n *yaml.Node) (any, bool) { return w.Duration(n, "v", DurationSpec{Zero: true}) }
	for _, c := range []struct {
		name string
		read read
		src  string
		want any
		err  string
	}{
		{"text", text, "hello", "hello", ""},
		{"text of a number", text, "0x10", "0x10", ""},
		{"text of null", text, "~", "", ""},
		{"text of a list", text, "[a]", "", "1:4: v: must be a string"},
		{"text of a mapping", text, "{a: b}", "", "1:4: v: must be a string"},
		{"string", str, `"5"`, "5", ""},
		{"string of a number", str, "5", "", `1:4: v: must be a string (write "5" in quotes)`},
		{"string of a bool", str, "true", "", `1:4: v: must be a string (write "true" in quotes)`},
		{"string of null", str, "~", "", "1:4: v: must be a string"},
		{"string of a list", str, "[a]", "", "1:4: v: must be a string"},
		{"bool", boolean, "true", true, ""},
		{"bool of null", boolean, "", false, ""},
		{"bool of yes", boolean, "yes", false, "1:4: v: must be true or false"},
		{"count", count, "3", 3, ""},
		{"count in hex", count, "0x10", 16, ""},
		{"count of 0", count, "0", 0, "1:4: v: must be at least 1"},
		{"count of text", count, "many", 0, "1:4: v: must be a whole number, at least 1"},
		{"size too big", size, "101", 0, "1:4: v: must be from 1 to 100"},
		{"size of a float", size, "1.5", 0, "1:4: v: must be a whole number from 1 to 100"},
		{"timeout", timeout, "1h30m", 90 * time.Minute, ""},
		{"timeout in seconds", timeout, "90", 90 * time.Second, ""},
		{"timeout in fractional seconds", timeout, "1.5", 1500 * time.Millisecond, ""},
		{"timeout of 0", timeout, "0", time.Duration(0), "1:4: v: must be a positive duration"},
		{"timeout of 0s", timeout, "0s", time.Duration(0), "1:4: v: must be a positive duration"},
		{"timeout quoted number", timeout, `"10"`, time.Duration(0), `1:4: v: invalid duration "10": write it like "90s", "10m" or "1h30m", or as a number of seconds`},
		{"timeout of a list", timeout, "[1]", time.Duration(0), `1:4: v: must be a duration like "10m" or a number of seconds`},
		{"timeout out of range", timeout, "1e300", time.Duration(0), "1:4: v: number of seconds is out of range"},
		{"timeout of a bool", timeout, "true", time.Duration(0), `1:4: v: must be a duration like "10m" or a number of seconds`},
		{"period", period, "150ms", 150 * time.Millisecond, ""},
		{"period of 0", period, "0", time.Duration(0), ""},
		{"period without a unit", period, "150", time.Duration(0), `1:4: v: invalid duration "150": write it like "90s", "10m" or "1h30m"`},
		{"negative period", period, "-1s", time.Duration(0), "1:4: v: must not be negative"},
		{"period of a mapping", period, "{a: 1}", time.Duration(0), `1:4: v: must be a duration like "10m"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			w, n := value(t, c.src)
			got, ok := c.read(w, n)
			if got != c.want || ok != (c.err == "") || errs(w) != c.err {
				t.Errorf("got %#v, %v, %q; want %#v, %q", got, ok, errs(w), c.want, c.err)
			}
			if _, ok := w.Pos["v"]; !ok {
				t.Error("no position recorded")
			}
			if w.Broken["v"] != (c.err != "") {
				t.Errorf("Broken = %v", w.Broken["v"])
			}
		})
	}
}

func TestNotNull(t *testing.T) {
	w, n := value(t, "")
	if w.NotNull(n, "v", ABool) || errs(w) != "1:3: v: must be true or false" {
		t.Errorf("null: %q", errs(w))
	}
	w, n = value(t, "x")
	if !w.NotNull(n, "v", ABool) || len(w.Errs) != 0 {
		t.Errorf("not null: %q", errs(w))
	}
}

func TestStringsAndEnv(t *testing.T) {
	w, n := value(t, "[a, 5, ~, [b], 'c']")
	if got := w.Strings(n, "v", w.Text); !reflect.DeepEqual(got, []string{"a", "5", "c"}) {
		t.Errorf("Strings(Text) = %q", got)
	}
	if want := "1:11: v[2]: must be a string\n1:14: v[3]: must be a string"; errs(w) != want {
		t.Errorf("got\n%s\nwant\n%s", errs(w), want)
	}
	w, n = value(t, "[a, 5]")
	if got := w.Strings(n, "v", w.String); !reflect.DeepEqual(got, []string{"a"}) ||
		errs(w) != `1:8: v[1]: must be a string (write "5" in quotes)` {
		t.Errorf("Strings(String) = %q, %q", got, errs(w))
	}
	w, n = value(t, "a")
	if got := w.Strings(n, "v", w.Text); got != nil || errs(w) != "1:4: v: must be a list of strings" {
		t.Errorf("Strings of a scalar = %q, %q", got, errs(w))
	}

	w, n = value(t, "{A: x, B: 2, C: ~, 'D=E': y, A: z}")
	if got := w.Env(n, "v", w.Text); !reflect.DeepEqual(got, map[string]string{"A": "x", "B": "2", "C": ""}) {
		t.Errorf("Env(Text) = %q", got)
	}
	// The mapping is read first (duplicates), then the names.
	if want := "1:33: v: duplicate key \"A\" (first defined at line 1)\n1:23: v: invalid environment variable name \"D=E\""; errs(w) != want {
		t.Errorf("got\n%s\nwant\n%s", errs(w), want)
	}
	w, n = value(t, "[A]")
	if got := w.Env(n, "v", w.Text); got != nil || errs(w) != "1:4: v: must be a map of strings" {
		t.Errorf("Env of a list = %q, %q", got, errs(w))
	}
	w, n = value(t, "~")
	if got := w.Env(n, "v", w.Text); got != nil || len(w.Errs) != 0 {
		t.Errorf("Env of null = %q, %q", got, errs(w))
	}
}

func TestFields(t *testing.T) {
	known := []string{"prompt", "adapter", "name"}
	w, n := value(t, "{promt: x, adapter: a, model: m, name: n}")
	var visited []string
	seen, ok := w.Fields(n, "task", "", known, func(kv Pair) { visited = append(visited, kv.Key.Value) })
	if !ok || !reflect.DeepEqual(visited, []string{"adapter", "name"}) || len(seen) != 4 {
		t.Errorf("visited %v, seen %v, ok %v", visited, seen, ok)
	}
	want := `1:5: task: unknown key "promt" (did you mean "prompt"?)` + "\n" +
		`1:27: task: unknown key "model" (known: prompt, adapter, name)`
	if errs(w) != want {
		t.Errorf("got\n%s\nwant\n%s", errs(w), want)
	}

	w, n = value(t, "[a]")
	if _, ok := w.Fields(n, "task", `a mapping with "id"`, known, func(Pair) {}); ok ||
		errs(w) != `1:4: task: must be a mapping with "id"` {
		t.Errorf("a list: %v, %q", ok, errs(w))
	}
	w, n = value(t, "[a]")
	if w.Fields(n, "task", "", known, func(Pair) {}); errs(w) != "1:4: task: must be a mapping" {
		t.Errorf("a list: %q", errs(w))
	}
	w, n = value(t, "~")
	if seen, ok := w.Fields(n, "task", "", known, func(Pair) { t.Error("visited") }); !ok || len(seen) != 0 || len(w.Errs) != 0 {
		t.Errorf("null: %v, %v, %q", seen, ok, errs(w))
	}
}

func TestMergeKeys(t *testing.T) {
	src := "{<<: {a: 1, b: 2}, b: 3, [x]: 4}"
	w, n := value(t, src)
	w.Merge = true
	pairs, _ := w.Map(n, "m", "")
	got := map[string]string{}
	for _, kv := range pairs {
		got[kv.Key.Value] = kv.Val.Value
	}
	if !reflect.DeepEqual(got, map[string]string{"a": "1", "b": "3"}) || errs(w) != "1:29: m: a key must be a string" {
		t.Errorf("merged: %v, %q", got, errs(w))
	}
	// Without Merge, "<<" is an ordinary key.
	w, n = value(t, src)
	w.Fields(n, "m", "", []string{"a", "b"}, func(Pair) {})
	if !strings.Contains(errs(w), `unknown key "<<"`) {
		t.Errorf("without Merge: %q", errs(w))
	}
	w, n = value(t, "{<<: 1}")
	w.Merge = true
	if w.Map(n, "m", ""); errs(w) != "1:9: m: << must merge a mapping or a list of mappings" {
		t.Errorf("bad merge: %q", errs(w))
	}
}

func TestAliasBudget(t *testing.T) {
	// Nine levels of ten aliases: 10^9 nodes from a few hundred bytes.
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 9; i++ {
		prev := "*a" + string(rune('0'+i-1))
		b.WriteString("a" + string(rune('0'+i)) + ": &a" + string(rune('0'+i)) + " [" + strings.Repeat(prev+", ", 9) + prev + "]\n")
	}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(b.String()), &doc); err != nil {
		t.Fatal(err)
	}
	w := NewWalker("f.yaml", b.Len())
	var walk func(n *yaml.Node, field string)
	walk = func(n *yaml.Node, field string) {
		elems, _ := w.Seq(n, field, "")
		for _, el := range elems {
			if w.Exhausted {
				return
			}
			if el = w.Deref(el); el.Kind == yaml.SequenceNode {
				walk(el, field)
			}
		}
	}
	walk(doc.Content[0].Content[17], "a8")
	if !w.Exhausted || !strings.Contains(errs(w), "through aliases") {
		t.Errorf("not stopped: %q", errs(w))
	}
}

func TestMessages(t *testing.T) {
	for got, want := range map[string]string{
		OneOf("headles", "interactive", "headless"): `must be "interactive" or "headless", got "headles" (did you mean "headless"?)`,
		OneOf("zz", "a", "b", "c"):                  `must be "a", "b" or "c", got "zz"`,
		Hint("promt", []string{"prompt", "id"}):     ` (did you mean "prompt"?)`,
		Hint("zzzzz", []string{"prompt", "id"}):     ` (known: prompt, id)`,
		Hint("zzzzz", nil):                          ``,
		MissingKey("command"):                       `missing required key "command"`,
		IntWhat(1, math.MaxInt):                     `a whole number, at least 1`,
		IntWhat(1, 10000):                           `a whole number from 1 to 10000`,
	} {
		if got != want {
			t.Errorf("got  %s\nwant %s", got, want)
		}
	}
}

// A list of mappings reads each element with its index and field path; an
// element that is no mapping (a null too) is reported at its own path and
// left to the reader; a null, an empty list and a value that is no list
// are nil.
func TestListOfMappings(t *testing.T) {
	read := func(w *Walker, n *yaml.Node) []string {
		return List(w, n, "v", "a list of things", func(i int, el *yaml.Node, f string) (string, bool) {
			el, ok := w.Mapping(el, f, "a mapping")
			if !ok {
				return "", false
			}
			return f + "=" + strconv.Itoa(i) + ":" + strconv.Itoa(len(el.Content)/2), true
		})
	}
	for _, c := range []struct {
		src  string
		want []string
		err  string
	}{
		{"[{a: 1}, {b: 2, c: 3}]", []string{"v[0]=0:1", "v[1]=1:2"}, ""},
		{"[{a: 1}, x, ~, {b: 2}]", []string{"v[0]=0:1", "v[3]=3:1"}, "1:13: v[1]: must be a mapping\n1:16: v[2]: must be a mapping"},
		{"[]", nil, ""},
		{"~", nil, ""},
		{"{a: 1}", nil, "1:4: v: must be a list of things"},
	} {
		w, n := value(t, c.src)
		got := read(w, n)
		if !reflect.DeepEqual(got, c.want) || (got == nil) != (c.want == nil) || errs(w) != c.err {
			t.Errorf("%s: got %#v, errors %q; want %#v, %q", c.src, got, errs(w), c.want, c.err)
		}
	}
}
