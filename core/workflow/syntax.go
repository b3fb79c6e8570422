package workflow

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/vibeteam/vibeteam/internal/yamlnode"
)

var utf8BOM = yamlnode.UTF8BOM

// isJSON says whether data is parsed as JSON: a .json file is, a .yaml or
// .yml file is not, and a file of any other name is when it starts like JSON
// does, with "{" or "[" (sniffed, so a YAML flow mapping in such a file can
// still be read as YAML).
func isJSON(data []byte, file string) (asJSON, sniffed bool) {
	switch strings.ToLower(filepath.Ext(file)) {
	case ".json":
		return true, false
	case ".yaml", ".yml":
		return false, false
	}
	t := bytes.TrimLeft(bytes.TrimPrefix(data, utf8BOM), " \t\r\n")
	return len(t) > 0 && (t[0] == '{' || t[0] == '['), true
}

// decodeJSON parses a JSON file with encoding/json, which, unlike yaml.v3,
// takes exactly the JSON grammar (escapes such as \/ and surrogate pairs, keys
// of any length; no trailing commas), and builds the node tree yaml.v3 would
// have given for it, positions included, so the walk, the checks and their
// messages are the same for both formats.
func decodeJSON(data []byte, file string) (*yaml.Node, ErrorList) {
	data = bytes.TrimPrefix(data, utf8BOM) // RFC 8259 lets a parser ignore it
	lc := yamlnode.NewLineCounter(data)
	fail := func(off int, format string, args ...any) (*yaml.Node, ErrorList) {
		line, col := lc.Pos(off)
		return nil, ErrorList{{Pos: Pos{File: file, Line: line, Col: col}, Msg: fmt.Sprintf(format, args...)}}
	}
	if len(bytes.Trim(data, " \t\r\n")) == 0 {
		return fail(0, yamlnode.MsgEmptyFile)
	}

	// Check the whole text first: json.Unmarshal's checker reports trailing
	// commas, missing ones and anything after the top-level value with the
	// offset of the offending byte, which Decoder.Token does not reliably.
	var raw json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		off := len(data)
		var se *json.SyntaxError
		if errors.As(err, &se) && !strings.Contains(se.Error(), "unexpected end") {
			off = int(se.Offset) - jsonOffsetBias()
		}
		return fail(min(max(off, 0), len(data)), "invalid JSON: %v", err)
	}
	// encoding/json would quietly turn bad bytes in strings into U+FFFD.
	if i := invalidUTF8(data); i >= 0 {
		return fail(i, "invalid JSON: invalid UTF-8 (byte 0x%02x)", data[i])
	}

	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var root *yaml.Node
	var open []*yaml.Node // mappings and sequences not closed yet
	end := 0              // offset just after the previous token
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		start := tokenStart(data, end)
		if err != nil { // not expected after the check above
			return fail(start, "invalid JSON: %v", err)
		}
		end = int(dec.InputOffset())
		n, closes, ok := jsonNode(tok)
		switch {
		case !ok:
			return fail(start, "invalid JSON: unexpected token %v", tok)
		case closes:
			if len(open) > 0 {
				open = open[:len(open)-1]
			}
			continue
		}
		n.Line, n.Column = lc.Pos(start)
		if len(open) == 0 {
			root = n
		} else {
			top := open[len(open)-1]
			top.Content = append(top.Content, n)
		}
		if n.Kind != yaml.ScalarNode {
			open = append(open, n)
		}
	}
	if root == nil {
		return fail(0, yamlnode.MsgEmptyFile)
	}
	return root, nil
}

// jsonNode is the node yaml.v3 gives for a JSON token, positions aside;
// closes says the token ends a mapping or a sequence (no node); ok is
// false for a token JSON has not.
func jsonNode(tok json.Token) (n *yaml.Node, closes, ok bool) {
	switch v := tok.(type) {
	case json.Delim:
		switch v {
		case '{':
			return &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Style: yaml.FlowStyle}, false, true
		case '[':
			return &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Style: yaml.FlowStyle}, false, true
		}
		return nil, true, true
	case string:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Style: yaml.DoubleQuotedStyle, Value: v}, false, true
	case json.Number:
		tag := "!!int"
		if strings.ContainsAny(string(v), ".eE") {
			tag = "!!float"
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: string(v)}, false, true
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(v)}, false, true
	case nil:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}, false, true
	}
	return nil, false, false
}

// tokenStart skips from the end of one token to the start of the next: the
// decoder leaves the separators (",", ":") and white space in between.
func tokenStart(data []byte, off int) int {
	for off < len(data) {
		switch data[off] {
		case ' ', '\t', '\r', '\n', ',', ':':
			off++
		default:
			return off
		}
	}
	return off
}

// jsonOffsetBias is what json.SyntaxError.Offset adds to the offset of the
// offending byte: 1 for the classic encoding/json ("after reading Offset
// bytes"), 0 for the one built on encoding/json/v2 (GOEXPERIMENT=jsonv2).
var jsonOffsetBias = sync.OnceValue(func() int {
	var raw json.RawMessage
	var se *json.SyntaxError
	if errors.As(json.Unmarshal([]byte("x"), &raw), &se) && se.Offset >= 0 && se.Offset <= 1 {
		return int(se.Offset)
	}
	return 1
})

// invalidUTF8 is the offset of the first byte of data that is not part of a
// valid UTF-8 sequence, or -1.
func invalidUTF8(data []byte) int {
	if utf8.Valid(data) {
		return -1
	}
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size <= 1 {
			return i
		}
		i += size
	}
	return -1
}
