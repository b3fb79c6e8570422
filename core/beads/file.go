package beads

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/vibeteam/vibeteam/internal/source"
)

// ReadFile reads the bead a grimoire works on (.bead in its templates)
// from a JSON file: one object, or an array holding one object, which is
// what `bd show ID --json` prints (bd 1.0 prints an array). Every error
// names the file.
func ReadFile(path string) (Bead, error) {
	data, err := source.Read(path)
	if err != nil {
		var se *source.Error
		if errors.As(err, &se) {
			msg := se.Msg
			if strings.HasPrefix(msg, "is larger than") {
				msg = fmt.Sprintf("is larger than %d MiB, too large for a bead", source.MaxSize>>20)
			}
			return nil, fmt.Errorf("bead file %s: %s", path, msg)
		}
		return nil, fmt.Errorf("bead file %s: %v", path, err)
	}
	const want = "want a JSON object, as `bd show ID --json` prints"
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("bead file %s: is empty; %s", path, want)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("bead file %s: not valid JSON: %s", path, jsonError(data, err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("bead file %s: holds more than one JSON value; %s", path, want)
	}
	switch v := v.(type) {
	case map[string]any:
		return v, nil
	case []any:
		switch {
		case len(v) == 0:
			return nil, fmt.Errorf("bead file %s: is an empty array; want one bead", path)
		case len(v) > 1:
			return nil, fmt.Errorf("bead file %s: is an array of %d beads; want one", path, len(v))
		}
		if m, ok := v[0].(map[string]any); ok {
			return m, nil
		}
		return nil, fmt.Errorf("bead file %s: the array holds %s, not an object", path, jsonKind(v[0]))
	}
	return nil, fmt.Errorf("bead file %s: is %s, not an object; %s", path, jsonKind(v), want)
}

// jsonError says where a JSON syntax error is, as line:col.
func jsonError(data []byte, err error) string {
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return "it ends too early"
		}
		return err.Error()
	}
	// The offending byte is the last of the Offset bytes read.
	off := max(min(int(se.Offset), len(data))-1, 0)
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	col := off - bytes.LastIndexByte(data[:off], '\n')
	return fmt.Sprintf("line %d, column %d: %v", line, col, se)
}

// jsonKind names the JSON type of a decoded value.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	}
	return "an object"
}
