package state

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/vibeteam/vibeteam/core/events"
)

// Keys of the flat event form that a payload's fields may not override.
var reservedEventKeys = map[string]bool{"time": true, "event": true, "session": true, "task": true}

// MarshalJSON writes the flat form
// {"time":RFC3339Nano,"event":kind,"session":id,"task":taskID,...fields}
// with "task" omitted when empty and the fields in sorted key order (the
// payload types declare them so). A payload that cannot be encoded is
// written as an "error" field saying why: losing one detail is better than
// losing the whole event.
func (e Event) MarshalJSON() ([]byte, error) {
	// Room for a usual line and the newline Write adds: an event is
	// written for every step a run takes.
	b := bytes.NewBuffer(make([]byte, 0, 256))
	// RFC 3339 needs no escaping: quoted as it is.
	b.WriteString(`{"time":"`)
	b.Write(e.Time.AppendFormat(b.AvailableBuffer(), time.RFC3339Nano))
	b.WriteString(`","event":`)
	writeJSON(b, e.Kind())
	b.WriteString(`,"session":`)
	writeJSON(b, e.Session)
	if e.Task != "" {
		b.WriteString(`,"task":`)
		writeJSON(b, e.Task)
	}
	switch p := e.Payload.(type) {
	case nil:
	case events.Other:
		writeFields(b, p.Fields)
	default:
		v, err := json.Marshal(p)
		if err != nil {
			writeFields(b, map[string]any{"error": fmt.Sprintf("%T: %v", p, err)})
		} else if len(v) > 2 {
			b.WriteByte(',')
			b.Write(v[1 : len(v)-1])
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// writeFields writes fields in sorted key order, each value that cannot be
// encoded as its fmt %v text.
func writeFields(b *bytes.Buffer, fields map[string]any) {
	keys := make([]string, 0, len(fields))
	for k := range fields {
		if !reservedEventKeys[k] {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		b.WriteByte(',')
		writeJSON(b, k)
		b.WriteByte(':')
		v, err := json.Marshal(fields[k])
		if err != nil {
			v, _ = json.Marshal(fmt.Sprintf("%v", fields[k]))
		}
		b.Write(v)
	}
}

// writeJSON writes s as a JSON string, as encoding/json does.
func writeJSON(b *bytes.Buffer, s string) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			v, _ := json.Marshal(s) // a string always marshals
			b.Write(v)
			return
		}
	}
	// Printable ASCII without a quote, a backslash or what encoding/json
	// escapes for HTML: as it is (ids, names, kinds).
	b.WriteByte('"')
	b.WriteString(s)
	b.WriteByte('"')
}

// UnmarshalJSON reads the flat form back, the fields as the payload of the
// event's kind (events.Decode: events.Other for a kind this version does
// not know).
func (e *Event) UnmarshalJSON(data []byte) error {
	var head struct {
		Time    *time.Time      `json:"time"`
		Event   json.RawMessage `json:"event"`
		Session json.RawMessage `json:"session"`
		Task    json.RawMessage `json:"task"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return err
	}
	var out Event
	if head.Time != nil {
		out.Time = *head.Time
	}
	var kind string
	for _, f := range []struct {
		key string
		raw json.RawMessage
		dst *string
	}{{"event", head.Event, &kind}, {"session", head.Session, &out.Session}, {"task", head.Task, &out.Task}} {
		if f.raw != nil {
			if err := json.Unmarshal(f.raw, f.dst); err != nil {
				return fmt.Errorf("event %s: %w", f.key, err)
			}
		}
	}
	p := events.Decode(kind, data)
	if o, ok := p.(events.Other); ok {
		for k := range reservedEventKeys {
			delete(o.Fields, k)
		}
		if len(o.Fields) == 0 {
			o.Fields = nil
		}
		p = o
	}
	out.Payload = p
	*e = out
	return nil
}

// Fields is the payload as the log line's keys give it, each value as
// encoding/json decodes into any (numbers are float64): the generic view,
// for a reader that looks for keys rather than kinds.
func (e Event) Fields() map[string]any {
	if o, ok := e.Payload.(events.Other); ok {
		return o.Fields
	}
	if e.Payload == nil {
		return nil
	}
	var m map[string]any
	if data, err := json.Marshal(e.Payload); err == nil {
		_ = json.Unmarshal(data, &m)
	}
	return m
}

// EventLog appends events to a JSONL file. It is safe for concurrent use.
type EventLog struct {
	mu sync.Mutex
	f  *os.File
	// gathering, when set (Gather), keeps the lines for a moment, to write
	// them with the ones that follow.
	gathering *GatheringWriter
	// Damage says what was cut off the end of the file when it was opened
	// (a line a kill or a full disk left unfinished); "" when it was whole.
	Damage string
}

// OpenEventLog opens path for appending, creating it (0600) and its parent
// directories (0700) as needed. A last line left unfinished (by a kill or
// a full disk) is cut off first, so the lines appended now do not follow
// half a line; Damage says so.
func OpenEventLog(path string) (*EventLog, error) {
	f, err := openAppend(path)
	if err != nil {
		return nil, fmt.Errorf("open event log: %w", err)
	}
	l := &EventLog{f: f}
	if cut, err := cutTornTail(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("open event log: %w", err)
	} else if cut > 0 {
		l.Damage = fmt.Sprintf("%s: the last line was cut short (%d bytes, a write interrupted by a kill or a full disk); removed", path, cut)
	}
	return l, nil
}

// cutTornTail truncates f after its last newline and returns how many
// bytes went.
func cutTornTail(f *os.File) (int64, error) {
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return 0, err
	}
	size := st.Size()
	buf := make([]byte, 4096)
	for end := size; end > 0; {
		start := max(end-int64(len(buf)), 0)
		n, err := f.ReadAt(buf[:end-start], start)
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			keep := start + int64(i) + 1
			if keep == size {
				return 0, nil
			}
			return size - keep, f.Truncate(keep)
		}
		end = start
	}
	return size, f.Truncate(0)
}

func openAppend(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), dirMode); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, fileMode)
	if err != nil {
		return nil, err
	}
	// The mode above only applies to a new file; logs hold agent output and
	// must stay private even if an older file was created more permissively.
	// Best effort: a file we can append to but not chmod is still usable.
	_ = f.Chmod(fileMode)
	return f, nil
}

// Gather makes Write keep each line up to d, and write the lines that came
// meanwhile together, in one write, no later than d after the first.
// A step of a short workflow emits half a dozen events: on a disk, a write
// each cost more than the step's own bookkeeping. Close writes what waits;
// a kill -9 loses the lines of its last d (the session's journal, which
// resume reads, loses nothing).
func (l *EventLog) Gather(d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil && l.gathering == nil {
		l.gathering = NewGatheringWriter(l.f, d)
	}
}

// Write appends e as one line, stamping the current time if e.Time is zero.
// Lines go out whole, in a single write(2) on an O_APPEND file, so lines
// from concurrent writers, even in other processes, do not interleave.
func (l *EventLog) Write(e Event) error {
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	line, err := e.MarshalJSON()
	if err != nil {
		return err
	}
	line = append(RedactJSON(line), '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return os.ErrClosed
	}
	if l.gathering != nil {
		_, err = l.gathering.Write(line)
		return err
	}
	_, err = l.f.Write(line)
	return err
}

// Close closes the file. Closing twice is a no-op.
func (l *EventLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	var err error
	if l.gathering != nil {
		err = l.gathering.Close()
	}
	err = errors.Join(err, l.f.Close())
	l.f = nil
	return err
}

// ReadEvents reads every event of a JSONL log. An unterminated last line is
// a write cut short by a crash and is ignored. Other malformed lines are
// skipped too, but then the good events come back together with an error
// naming the first bad line, so a reader can show what survives.
func ReadEvents(path string) ([]Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := bufio.NewReader(f)
	var (
		events  []Event
		badLine int
		badErr  error
	)
	for n := 1; ; n++ {
		line, err := r.ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return events, fmt.Errorf("read %s: %w", path, err)
		}
		complete := len(line) > 0 && line[len(line)-1] == '\n'
		if trimmed := bytes.TrimSpace(line); len(trimmed) > 0 {
			var e Event
			if uerr := json.Unmarshal(trimmed, &e); uerr == nil {
				events = append(events, e)
			} else if complete && badErr == nil {
				badLine, badErr = n, uerr
			}
		}
		if err != nil { // io.EOF
			break
		}
	}
	if badErr != nil {
		return events, fmt.Errorf("%s:%d: malformed event: %w", path, badLine, badErr)
	}
	return events, nil
}
