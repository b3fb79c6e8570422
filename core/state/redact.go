package state

import (
	"bytes"
	"encoding/json"
	"io"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
)

// Redacted is what a secret's value is written as.
const Redacted = "***"

// minSubstring is the shortest secret looked for inside other text (a
// prompt, a line of output); shorter ones are redacted only where they are
// a whole value (a variable's, an env: key's), lest every "ab" of a log go.
const minSubstring = 4

// secrets are the values of this run's secrets (SetSecrets): one run per
// process, and every file it writes (session, journal, event log, task
// logs) goes through Redact*.
var secrets atomic.Pointer[[]string]

// SetSecrets sets the values that are written as *** from now on.
func SetSecrets(values []string) {
	var vs []string
	for _, v := range values {
		if v != "" && v != Redacted {
			vs = append(vs, v)
		}
	}
	// Longest first: a secret that holds another goes whole.
	sort.Slice(vs, func(i, j int) bool { return len(vs[i]) > len(vs[j]) })
	secrets.Store(&vs)
}

// AddSecrets adds values to the secrets redacted, keeping those set
// before: several sessions run in one process (a backlog run) each redact
// every session's secrets.
func AddSecrets(values []string) {
	all := slices.Clone(secretValues())
	for _, v := range values {
		if !slices.Contains(all, v) {
			all = append(all, v)
		}
	}
	SetSecrets(all)
}

func secretValues() []string {
	if p := secrets.Load(); p != nil {
		return *p
	}
	return nil
}

// RedactBytes replaces the secrets in raw text (task output).
func RedactBytes(b []byte) []byte {
	for _, v := range secretValues() {
		if len(v) >= minSubstring && bytes.Contains(b, []byte(v)) {
			b = bytes.ReplaceAll(b, []byte(v), []byte(Redacted))
		}
	}
	return b
}

// redactString replaces the secrets in one JSON string value.
func redactString(s string, vs []string) string {
	for _, v := range vs {
		switch {
		case s == v:
			return Redacted
		case len(v) >= minSubstring:
			s = strings.ReplaceAll(s, v, Redacted)
		}
	}
	return s
}

// RedactJSON replaces the secrets in every string of a JSON document,
// written compact. A document without any comes back unchanged, at the cost
// of a search.
func RedactJSON(data []byte) []byte {
	vs := secretValues()
	if len(vs) == 0 || !mentions(data, vs) {
		return data
	}
	var doc any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return RedactBytes(data) // not JSON after all: as text
	}
	doc = redactValue(doc, vs)
	out, err := json.Marshal(doc)
	if err != nil {
		return RedactBytes(data)
	}
	if bytes.HasSuffix(data, []byte("\n")) {
		out = append(out, '\n')
	}
	return out
}

// mentions reports whether data may hold one of the secrets, as JSON
// writes them.
func mentions(data []byte, vs []string) bool {
	for _, v := range vs {
		enc, _ := json.Marshal(v)
		if len(v) < minSubstring {
			if bytes.Contains(data, enc) { // only a whole value counts
				return true
			}
			continue
		}
		if bytes.Contains(data, enc[1:len(enc)-1]) {
			return true
		}
	}
	return false
}

func redactValue(v any, vs []string) any {
	switch x := v.(type) {
	case string:
		return redactString(x, vs)
	case map[string]any:
		for k, e := range x {
			x[k] = redactValue(e, vs)
		}
	case []any:
		for i, e := range x {
			x[i] = redactValue(e, vs)
		}
	}
	return v
}

// RedactWriter writes to w with the secrets as ***, as the files are: the
// choke point of a stream vibeteam prints to (its stdout and stderr), so
// that no message, report or mirrored output shows one, whichever code
// printed it. Each Write is redacted whole: a line printed in one call is.
// The secrets are those set when the bytes are written. A w with a file
// descriptor (a terminal) keeps it: Fd gives it.
func RedactWriter(w io.Writer) io.Writer {
	if f, ok := w.(interface{ Fd() uintptr }); ok {
		return redactFile{redactWriter{w}, f}
	}
	return redactWriter{w}
}

type redactWriter struct{ w io.Writer }

func (r redactWriter) Write(p []byte) (int, error) {
	red := RedactBytes(p)
	if len(red) == len(p) && (len(p) == 0 || &red[0] == &p[0]) {
		return r.w.Write(p)
	}
	if _, err := r.w.Write(red); err != nil {
		return 0, err
	}
	return len(p), nil
}

type redactFile struct {
	redactWriter
	f interface{ Fd() uintptr }
}

func (r redactFile) Fd() uintptr { return r.f.Fd() }
