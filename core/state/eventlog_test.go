package state

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/vibeteam/vibeteam/core/events"
)

func TestEventMarshalFlat(t *testing.T) {
	ts := time.Date(2025, 3, 4, 5, 6, 7, 890, time.UTC)
	e := Event{Time: ts, Session: "ab12cd34", Task: "impl", Payload: events.Other{Name: "task_done", Fields: map[string]any{
		"exit": 0, "duration": 1.5, "event": "spoofed", "time": "spoofed", "session": "x", "task": "y",
	}}}
	data, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"time":"2025-03-04T05:06:07.00000089Z","event":"task_done","session":"ab12cd34","task":"impl","duration":1.5,"exit":0}`
	if string(data) != want {
		t.Errorf("got  %s\nwant %s", data, want)
	}

	// No task: the key is left out rather than written empty.
	data, _ = json.Marshal(Event{Time: ts, Session: "s", Payload: events.Other{Name: "workflow_start"}})
	if strings.Contains(string(data), `"task"`) {
		t.Errorf("empty task written: %s", data)
	}

	// A value encoding/json refuses still yields a valid line.
	data, err = json.Marshal(Event{Time: ts, Payload: events.Other{Name: "x", Fields: map[string]any{"ch": make(chan int), "ok": true}}})
	if err != nil || !json.Valid(data) || !strings.Contains(string(data), `"ok":true`) {
		t.Errorf("unencodable field: %s, %v", data, err)
	}
}

func TestEventLogRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "logs", "ab12cd34.jsonl")
	l, err := OpenEventLog(path)
	if err != nil {
		t.Fatal(err)
	}
	checkMode(t, path, 0o600)
	checkMode(t, filepath.Dir(path), 0o700)
	ts := time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC)
	in := []Event{
		{Time: ts, Session: "ab12cd34", Payload: events.Other{Name: "workflow_start", Fields: map[string]any{"workflow": "review"}}},
		{Time: ts.Add(time.Second), Session: "ab12cd34", Task: "impl",
			Payload: events.Other{Name: "task_done", Fields: map[string]any{"exit": 3, "tags": []any{"a", "b"}, "nested": map[string]any{"k": "v"}}}},
		{Session: "ab12cd34", Payload: events.Other{Name: "no_time"}},
	}
	for _, e := range in {
		if err := l.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Write(in[0]); err == nil {
		t.Error("write after close succeeded")
	}
	if err := l.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}

	// Reopening appends.
	l, _ = OpenEventLog(path)
	l.Write(Event{Time: ts, Session: "ab12cd34", Payload: events.Other{Name: "resumed"}})
	l.Close()

	out, err := ReadEvents(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 4 {
		t.Fatalf("read %d events, want 4", len(out))
	}
	if !out[0].Time.Equal(ts) || out[0].Kind() != "workflow_start" || out[0].Fields()["workflow"] != "review" || out[0].Task != "" {
		t.Errorf("event 0: %+v", out[0])
	}
	e := out[1]
	f := e.Fields()
	if e.Task != "impl" || f["exit"] != float64(3) || fmt.Sprint(f["tags"]) != "[a b]" ||
		f["nested"].(map[string]any)["k"] != "v" || len(f) != 3 {
		t.Errorf("event 1: %+v", e)
	}
	if out[2].Time.IsZero() || out[2].Fields() != nil {
		t.Errorf("event 2: %+v", out[2])
	}
	if out[3].Kind() != "resumed" {
		t.Errorf("event 3: %+v", out[3])
	}
}

func TestEventLogConcurrentWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.jsonl")
	l, err := OpenEventLog(path)
	if err != nil {
		t.Fatal(err)
	}
	const writers, each = 8, 200
	big := strings.Repeat("x", 5000) // longer lines make interleaving likelier
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if err := l.Write(Event{Session: "s", Task: fmt.Sprint("t", w), Payload: events.Other{Name: "tick", Fields: map[string]any{"i": i, "pad": big}}}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	l.Close()

	f, _ := os.Open(path)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	lines := 0
	for sc.Scan() {
		lines++
		if !json.Valid(sc.Bytes()) {
			t.Fatalf("line %d is not valid JSON", lines)
		}
	}
	if lines != writers*each {
		t.Errorf("%d lines, want %d", lines, writers*each)
	}
	events, err := ReadEvents(path)
	if err != nil || len(events) != writers*each {
		t.Errorf("ReadEvents: %d events, %v", len(events), err)
	}
}

func TestReadEventsDamaged(t *testing.T) {
	dir := t.TempDir()
	good := `{"time":"2025-01-01T00:00:00Z","event":"a","session":"s"}`

	// A crash mid-write leaves an unterminated last line: ignored silently.
	p := filepath.Join(dir, "cut.jsonl")
	os.WriteFile(p, []byte(good+"\n"+good+"\n"+`{"time":"2025-01-01T0`), 0o600)
	events, err := ReadEvents(p)
	if err != nil || len(events) != 2 {
		t.Errorf("truncated tail: %d events, %v", len(events), err)
	}

	// Garbage in the middle is reported, but the good events survive.
	p = filepath.Join(dir, "bad.jsonl")
	os.WriteFile(p, []byte(good+"\nnot json\n\n"+good+"\n"), 0o600)
	events, err = ReadEvents(p)
	if err == nil || !strings.Contains(err.Error(), ":2:") || len(events) != 2 {
		t.Errorf("corrupt middle: %d events, %v", len(events), err)
	}

	if _, err := ReadEvents(filepath.Join(dir, "missing.jsonl")); !os.IsNotExist(err) {
		t.Errorf("missing file: %v", err)
	}
}

func TestEventUnmarshalRejectsNonObject(t *testing.T) {
	var e Event
	if err := json.Unmarshal([]byte(`[1]`), &e); err == nil {
		t.Error("array accepted")
	}
	if err := json.Unmarshal([]byte(`{"time":5}`), &e); err == nil {
		t.Error("numeric time accepted")
	}
	if err := json.Unmarshal(bytes.TrimSpace([]byte(` {"event":"x","k":null} `)), &e); err != nil || e.Kind() != "x" {
		t.Errorf("%+v %v", e, err)
	}
}

// Every kind of event goes through the log's line and comes back as the
// same typed payload, keys in order.
func TestEveryKindRoundTripsThroughALine(t *testing.T) {
	t.Parallel()
	ts := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	for _, kind := range events.Kinds() {
		p := events.Decode(kind, []byte(`{"status":"DONE","state":"IDLE","name":"n","address":"1.2/0","pid":42,"exit_code":3,"failed_steps":["a (1)"],"input":{"a":1}}`))
		if _, other := p.(events.Other); other {
			t.Fatalf("%s: decoded as %#v", kind, p)
		}
		in := Event{Time: ts, Session: "s1", Task: "t1", Payload: p}
		line, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(line, []byte(`{"time":"2026-01-02T03:04:05.000000006Z","event":"`+kind+`","session":"s1","task":"t1"`)) {
			t.Errorf("%s: %s", kind, line)
		}
		var out Event
		if err := json.Unmarshal(line, &out); err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		if !out.Time.Equal(in.Time) || out.Session != in.Session || out.Task != in.Task || !reflect.DeepEqual(out.Payload, in.Payload) {
			t.Errorf("%s:\n wrote %#v\n read  %#v", kind, in, out)
		}
	}
}

// A log line of an older version, with task_finished's "exitCode", reads
// as today's TaskEnd; one of a kind this version does not know keeps its
// fields.
func TestOldAndUnknownLinesRead(t *testing.T) {
	t.Parallel()
	var e Event
	if err := json.Unmarshal([]byte(`{"time":"2026-01-02T03:04:05Z","event":"task_finished","session":"s","task":"t","exitCode":3,"reason":"exit","status":"ERROR"}`), &e); err != nil {
		t.Fatal(err)
	}
	p, ok := e.Payload.(events.TaskEnd)
	if !ok || p.ExitCode == nil || *p.ExitCode != 3 || p.Status != "ERROR" || p.Reason != "exit" || e.Task != "t" {
		t.Fatalf("%#v", e)
	}
	line, _ := json.Marshal(e)
	if !strings.Contains(string(line), `"exit_code":3`) || strings.Contains(string(line), "exitCode") {
		t.Errorf("rewritten as %s", line)
	}
	if err := json.Unmarshal([]byte(`{"time":"2026-01-02T03:04:05Z","event":"from.the.future","session":"s","n":1}`), &e); err != nil {
		t.Fatal(err)
	}
	if o, ok := e.Payload.(events.Other); !ok || e.Kind() != "from.the.future" || !reflect.DeepEqual(o.Fields, map[string]any{"n": float64(1)}) {
		t.Fatalf("%#v", e)
	}
}

// TestEventStringsAsEncodingJSON: the strings of an event line (its kind,
// session, task, field names) are written as encoding/json writes them,
// escapes included, whatever they hold.
func TestEventStringsAsEncodingJSON(t *testing.T) {
	cases := []string{"", "plain-id_1.2/x@y", "a\"b", `back\slash`, "<html>&", "tab\there", "nl\n", "\x00\x1f\x7f",
		"é ü 日本", "\u2028\u2029", "bad \xff utf8", "ends with \xe2\x82"}
	for c := 0; c < 256; c++ {
		cases = append(cases, "x"+string(rune(c))+"y", "x"+string([]byte{byte(c)})+"y")
	}
	for _, s := range cases {
		var b bytes.Buffer
		writeJSON(&b, s)
		want, _ := json.Marshal(s)
		if b.String() != string(want) {
			t.Errorf("%q: wrote %s, encoding/json %s", s, b.String(), want)
		}
	}
	ts := time.Date(2025, 3, 4, 5, 6, 7, 0, time.FixedZone("", 3600))
	data, _ := json.Marshal(Event{Time: ts, Session: "s<1>", Task: "t&\"", Payload: events.Other{Name: "k\u2028"}})
	want := `{"time":"2025-03-04T05:06:07+01:00","event":"k\u2028","session":"s\u003c1\u003e","task":"t\u0026\""}`
	if string(data) != want {
		t.Errorf("got  %s\nwant %s", data, want)
	}
}

// A gathering log writes the lines that come together in one write, no
// later than its delay after the first; Close writes what still waits.
func TestEventLogGathers(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "g.jsonl")
		l, err := OpenEventLog(path)
		if err != nil {
			t.Fatal(err)
		}
		l.Gather(20 * time.Millisecond)
		lines := func() int {
			data, _ := os.ReadFile(path)
			return strings.Count(string(data), "\n")
		}
		for i := 0; i < 3; i++ {
			if err := l.Write(Event{Session: "s", Payload: events.Warn{Warning: strconv.Itoa(i)}}); err != nil {
				t.Fatal(err)
			}
		}
		if n := lines(); n != 0 {
			t.Fatalf("%d lines written at once", n)
		}
		time.Sleep(20 * time.Millisecond)
		synctest.Wait()
		if n := lines(); n != 3 {
			t.Fatalf("%d lines after the delay, want 3", n)
		}
		_ = l.Write(Event{Session: "s", Payload: events.Warn{Warning: "last"}})
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		evs, err := ReadEvents(path)
		if err != nil || len(evs) != 4 {
			t.Fatalf("%d events, %v", len(evs), err)
		}
		if w, _ := evs[3].Payload.(events.Warn); w.Warning != "last" {
			t.Errorf("last event %+v", evs[3])
		}
	})
}
