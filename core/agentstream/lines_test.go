package agentstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// collector gathers lines as a Lines caller sees them, copied.
type collector struct{ lines []Line }

func (c *collector) add(l Line) {
	l.Text = bytes.Clone(l.Text)
	c.lines = append(c.lines, l)
}

// feed writes s to a Lines in chunks of n bytes, then flushes.
func feed(s string, n int) []Line {
	var l Lines
	var c collector
	for len(s) > 0 {
		k := min(n, len(s))
		l.Write([]byte(s[:k]), c.add)
		s = s[k:]
	}
	l.Flush(c.add)
	return c.lines
}

func TestLinesAcrossChunks(t *testing.T) {
	t.Parallel()
	var l Lines
	var got []string
	collect := func(ln Line) { got = append(got, string(ln.Text)) }
	for _, chunk := range []string{`{"a":`, "1}\n{\"b\"", ":2}\r\n\n", "tail"} {
		l.Write([]byte(chunk), collect)
	}
	l.Flush(collect)
	want := []string{`{"a":1}`, `{"b":2}`, "", "tail"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("got %q, want %q", got, want)
	}
}

// The line: a claude result of more than MaxLine that says the run
// failed, what it cost and its tokens. It is read, with its long result
// cut to its head and its end, whole.
func TestLinesReadsAnOverlongResultLine(t *testing.T) {
	t.Parallel()
	long := "HEAD" + strings.Repeat("é\"\\ \u2028x", MaxLine/8) + `the end: {"ok":true}`
	doc, _ := json.Marshal(map[string]any{
		"type": "result", "subtype": "success", "is_error": true, "result": long,
		"total_cost_usd": 12.5, "usage": map[string]any{"input_tokens": 500000, "output_tokens": 7},
		"permission_denials": []any{map[string]any{"tool_name": "Bash", "tool_use_id": "t1", "tool_input": map[string]any{"command": "rm -rf /"}}},
	})
	if len(doc) <= MaxLine {
		t.Fatalf("the line is only %d bytes", len(doc))
	}
	for _, chunk := range []int{1 << 20, 4093} {
		lines := feed(string(doc)+"\nnext\n", chunk)
		if len(lines) != 2 || string(lines[1].Text) != "next" {
			t.Fatalf("chunks of %d: %d lines", chunk, len(lines))
		}
		ln := lines[0]
		if !ln.Cut || ln.Lost || ln.Len != int64(len(doc)) || len(ln.Text) > stringHead+stringTail+tailMark+1024 {
			t.Fatalf("chunks of %d: cut %v lost %v len %d, %d bytes given", chunk, ln.Cut, ln.Lost, ln.Len, len(ln.Text))
		}
		p := &claudeParser{}
		p.Feed(ln.Text)
		sum := p.Summary()
		if !sum.IsError || sum.CostUSD != 12.5 || sum.Tokens.Input != 500000 || len(sum.Denials) != 1 || sum.Denials[0].Tool != "Bash" {
			t.Errorf("chunks of %d: summary %+v", chunk, sum)
		}
		if !strings.HasPrefix(sum.Result, "HEAD") || !strings.HasSuffix(sum.Result, `the end: {"ok":true}`) || !strings.Contains(sum.Result, " MB cut) … ") {
			t.Errorf("chunks of %d: result %.40q … %q", chunk, sum.Result, sum.Result[len(sum.Result)-40:])
		}
		if head := sum.Result[:stringHead/4]; !strings.HasPrefix(long, head) {
			t.Errorf("chunks of %d: the head is not the result's", chunk)
		}
		if tail := sum.Result[len(sum.Result)-stringTail/4:]; !strings.HasSuffix(long, tail) {
			t.Errorf("chunks of %d: the tail is not the result's", chunk)
		}
	}
}

// A long line that is not JSON is given as its head; one that begins as
// JSON and is not (NULs) the same, so parsers ignore it as they do a short
// one; a document too large even cut is Lost. The lines after each come
// whole.
func TestLinesOverlongShapes(t *testing.T) {
	t.Parallel()
	big := MaxLine + 10
	for _, c := range []struct {
		name, line string
		lost       bool
	}{
		{"text", strings.Repeat("x", big), false},
		{"NULs in a string", `{"type":"result","result":"` + strings.Repeat("\x00", big) + `"}`, false},
		{"NULs", "{" + strings.Repeat("\x00", big), false},
		{"unterminated", `{"type":"result","result":"` + strings.Repeat("a", big), false},
		{"two documents", `{"a":"` + strings.Repeat("a", big) + `"}{}`, false},
		{"a million elements", `{"type":"result","n":[` + strings.Repeat("1,", big/2) + `1]}`, true},
	} {
		lines := feed(c.line+"\r\n"+`{"type":"next"}`+"\n", 64<<10)
		if len(lines) != 2 || string(lines[1].Text) != `{"type":"next"}` {
			t.Fatalf("%s: %d lines", c.name, len(lines))
		}
		ln := lines[0]
		if !ln.Cut || ln.Lost != c.lost || ln.Len != int64(len(c.line)+1) || len(ln.Text) != headKeep || !strings.HasPrefix(c.line, string(ln.Text)) {
			t.Errorf("%s: cut %v lost %v len %d, %d bytes given", c.name, ln.Cut, ln.Lost, ln.Len, len(ln.Text))
		}
		if json.Valid(ln.Text) {
			t.Errorf("%s: given as JSON", c.name)
		}
	}
}

// Strings of escapes, cut anywhere, stay JSON: a cut falls only between
// escapes.
func TestLinesCutsStringsBetweenEscapes(t *testing.T) {
	t.Parallel()
	for _, unit := range []string{`\u00e9`, `\"`, `\ud83d\ude00`, `é`, `a\\`} {
		raw := `["` + strings.Repeat(unit, MaxLine/len(unit)+1) + `",{"k":"` + strings.Repeat(unit, 100) + `"}]`
		lines := feed(raw, 3001)
		if len(lines) != 1 || !lines[0].Cut || lines[0].Lost {
			t.Fatalf("%s: %d lines", unit, len(lines))
		}
		var got []any
		if err := json.Unmarshal(lines[0].Text, &got); err != nil {
			t.Fatalf("%s: %v", unit, err)
		}
		var want []any
		_ = json.Unmarshal([]byte(raw), &want)
		g, w := got[0].(string), want[0].(string)
		if strings.ContainsRune(g, '\uFFFD') || !strings.HasPrefix(w, g[:stringHead/4]) || !strings.HasSuffix(w, g[len(g)-stringTail/4:]) {
			t.Errorf("%s: the cut string is not the original's head and tail", unit)
		}
		if got[1].(map[string]any)["k"] != want[1].(map[string]any)["k"] {
			t.Errorf("%s: a short string was changed", unit)
		}
	}
}

// LineReader gives the same lines from a reader, the last without its
// newline, then io.EOF; a read error after them.
func TestLineReader(t *testing.T) {
	t.Parallel()
	long := `{"type":"result","result":"` + strings.Repeat("r", MaxLine) + `"}`
	in := "a\r\n" + long + "\n\nlast"
	var got []Line
	lr := NewLineReader(iotest.HalfReader(strings.NewReader(in)))
	for {
		ln, err := lr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		ln.Text = bytes.Clone(ln.Text)
		got = append(got, ln)
	}
	if len(got) != 4 || string(got[0].Text) != "a" || !got[1].Cut || !json.Valid(got[1].Text) || string(got[2].Text) != "" || string(got[3].Text) != "last" {
		t.Fatalf("got %d lines", len(got))
	}
	boom := errors.New("boom")
	lr = NewLineReader(io.MultiReader(strings.NewReader("x\ny"), iotest.ErrReader(boom)))
	var texts []string
	var err error
	for {
		var ln Line
		if ln, err = lr.Next(); err != nil {
			break
		}
		texts = append(texts, string(ln.Text))
	}
	if strings.Join(texts, "|") != "x|y" || !errors.Is(err, boom) {
		t.Errorf("got %q, %v", texts, err)
	}
}
