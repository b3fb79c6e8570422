package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/vibeteam/vibeteam/core"
	"github.com/vibeteam/vibeteam/core/state"
)

// eventsOut is --events: every event of a run as one JSONL line, secrets
// as ***, tagged with its bead in a backlog run. It is a subscriber of the
// orchestrator of its own, beside the display: the display shows, this
// records.
type eventsOut struct {
	mu    sync.Mutex // events come from many goroutines
	w     io.Writer
	close func() error
}

// openEvents is where --events writes: "" nowhere (nil), "-" stdout, else
// the file (appended to, private).
func openEvents(streams IO, name string) (*eventsOut, error) {
	switch name {
	case "":
		return nil, nil
	case "-":
		return &eventsOut{w: streams.Out}, nil
	}
	f, err := os.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("--events: %w", err)
	}
	return &eventsOut{w: f, close: f.Close}, nil
}

// of is the subscriber that writes the events of bead's session ("" for a
// run of its own); nil when there is no --events.
func (o *eventsOut) of(bead string) func(core.Event) {
	if o == nil {
		return nil
	}
	return func(e core.Event) {
		o.mu.Lock()
		defer o.mu.Unlock()
		writeEventLine(o.w, bead, e)
	}
}

// Close closes the --events file.
func (o *eventsOut) Close() {
	if o != nil && o.close != nil {
		_ = o.close()
	}
}

// writeEventLine writes e, tagged with its bead, as one JSONL line.
func writeEventLine(w io.Writer, bead string, e core.Event) {
	b, err := json.Marshal(e)
	if err != nil {
		return
	}
	b = state.RedactJSON(b)
	if bead != "" && len(b) > 1 && b[0] == '{' && !hasKey(b, "bead") {
		tag, _ := json.Marshal(bead)
		b = append(append([]byte(`{"bead":`), tag...), append([]byte{','}, b[1:]...)...)
	}
	_, _ = w.Write(append(b, '\n'))
}

// hasKey reports whether the JSON object line has key at its top level:
// an event that names its bead itself (workflow.started) is not tagged
// with a second "bead".
func hasKey(line []byte, key string) bool {
	if !bytes.Contains(line, []byte(`"`+key+`"`)) {
		return false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(line, &m) != nil {
		return false
	}
	_, ok := m[key]
	return ok
}
