package workflow

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/vibeteam/vibeteam/internal/source"
)

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

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
	lc := newLineCounter(data)
	fail := func(off int, format string, args ...any) (*yaml.Node, ErrorList) {
		line, col := lc.pos(off)
		return nil, ErrorList{{Pos: Pos{File: file, Line: line, Col: col}, Msg: fmt.Sprintf(format, args...)}}
	}
	if len(bytes.Trim(data, " \t\r\n")) == 0 {
		return fail(0, "file is empty")
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
		var n *yaml.Node
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{':
				n = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Style: yaml.FlowStyle}
			case '[':
				n = &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Style: yaml.FlowStyle}
			default:
				if len(open) > 0 {
					open = open[:len(open)-1]
				}
				continue
			}
		case string:
			n = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Style: yaml.DoubleQuotedStyle, Value: v}
		case json.Number:
			tag := "!!int"
			if strings.ContainsAny(string(v), ".eE") {
				tag = "!!float"
			}
			n = &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: string(v)}
		case bool:
			n = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(v)}
		case nil:
			n = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}
		default:
			return fail(start, "invalid JSON: unexpected token %v", tok)
		}
		n.Line, n.Column = lc.pos(start)
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
		return fail(0, "file is empty")
	}
	return root, nil
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

// lineCounter turns byte offsets into 1-based lines and columns, counting
// columns in characters as yaml.v3 does (a tab or an "é" is one column). It
// is fastest when asked about offsets in increasing order, as a parse does.
type lineCounter struct {
	data           []byte
	start          int // a leading byte order mark is not a column
	off, line, col int // the position of data[off]
}

func newLineCounter(data []byte) *lineCounter {
	c := &lineCounter{data: data}
	if bytes.HasPrefix(data, utf8BOM) {
		c.start = len(utf8BOM)
	}
	c.off, c.line, c.col = c.start, 1, 1
	return c
}

// pos is the line and column of the character at off; off = len(data) is
// the end of the input.
func (c *lineCounter) pos(off int) (line, col int) {
	off = min(max(off, c.start), len(c.data))
	if off < c.off {
		c.off, c.line, c.col = c.start, 1, 1
	}
	for c.off < off {
		b := c.data[c.off]
		switch {
		case b == '\n' || b == '\r' && (c.off+1 == len(c.data) || c.data[c.off+1] != '\n'):
			c.line++
			c.col = 1
			c.off++
		case b < utf8.RuneSelf:
			c.col++
			c.off++
		default:
			_, size := utf8.DecodeRune(c.data[c.off:])
			if c.off+size > off {
				return c.line, c.col // off is inside this character
			}
			c.col++
			c.off += size
		}
	}
	return c.line, c.col
}

// yamlLineRE finds the position yaml.v3 writes into its messages.
var yamlLineRE = regexp.MustCompile(`\bline (\d+)(?:, column (\d+))?: `)

// yamlParserProblems are the messages of yaml.v3's parser, as opposed to its
// scanner. yaml.v3 adds one to the 0-based line of a scanner error but not to
// that of a parser error, so those come out a line early (go-yaml/yaml#205).
var yamlParserProblems = []string{
	"did not find expected node content",
	"did not find expected key",
	"did not find expected '-' indicator",
	"did not find expected ',' or '}'",
	"did not find expected ',' or ']'",
	"did not find expected <document start>",
	"did not find expected <stream-start>",
	"found undefined tag handle",
	"found incompatible YAML document",
	"found duplicate %YAML directive",
	"found duplicate %TAG directive",
}

// yamlReaderProblems are the messages of yaml.v3's reader, which knows only
// a byte offset and does not report it: the offending character is looked
// for here instead.
var yamlReaderProblems = []string{
	"control characters are not allowed",
	"invalid leading UTF-8 octet",
	"incomplete UTF-8 octet sequence",
	"invalid trailing UTF-8 octet",
	"invalid length of a UTF-8 sequence",
	"invalid Unicode character",
}

// yamlFirstLinePrefixes start the messages of scanner and parser errors.
// yaml.v3 leaves the line out of those when it is the first one (line 0 to
// it), which is how a message without a line can still be placed.
var yamlFirstLinePrefixes = []string{
	"found ", "did not find ", "could not find ", "mapping values ", "mapping keys ",
	"block sequence entries ", "exceeded max depth ",
}

// yamlAliasRE is yaml.v3's message for an alias to an anchor never defined,
// which carries no position: the alias is looked for in the text instead.
var yamlAliasRE = regexp.MustCompile(`^unknown anchor '(.*)' referenced$`)

// yamlSyntaxError turns "yaml: line 3: did not find expected key" into an
// Error at line 3: yaml.v3 only reports errors as text. Errors that cannot
// be placed keep only the file name.
func yamlSyntaxError(err error, file string, data []byte) *Error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	pos := Pos{File: file}
	switch m := yamlLineRE.FindStringSubmatchIndex(msg); {
	case m != nil:
		pos.Line, _ = strconv.Atoi(msg[m[2]:m[3]])
		if m[4] >= 0 {
			pos.Col, _ = strconv.Atoi(msg[m[4]:m[5]])
		}
		msg = msg[:m[0]] + msg[m[1]:]
		if slices.Contains(yamlParserProblems, msg) {
			pos.Line++
		}
		// An error at the end of a file without a final line break is put
		// on the line after the last one.
		if last, _ := newLineCounter(data).pos(len(data)); pos.Line > last {
			pos.Line, pos.Col = last, 0
		}
	case yamlAliasRE.MatchString(msg):
		if off := source.AliasOffset(data, yamlAliasRE.FindStringSubmatch(msg)[1]); off >= 0 {
			pos.Line, pos.Col = newLineCounter(data).pos(off)
		}
	case slices.Contains(yamlReaderProblems, msg):
		if off := yamlBadChar(data); off >= 0 {
			pos.Line, pos.Col = newLineCounter(data).pos(off)
		}
	default:
		for _, p := range yamlFirstLinePrefixes {
			if strings.HasPrefix(msg, p) {
				pos.Line = 1
				break
			}
		}
	}
	return &Error{Pos: pos, Msg: "invalid YAML: " + msg}
}

// yamlBadChar is the offset of the first character yaml.v3's reader refuses
// (a byte that is not valid UTF-8, or a character outside YAML's printable
// set), or -1.
func yamlBadChar(data []byte) int {
	i := 0
	switch {
	case bytes.HasPrefix(data, utf8BOM):
		i = len(utf8BOM)
	case bytes.HasPrefix(data, []byte{0xFF, 0xFE}), bytes.HasPrefix(data, []byte{0xFE, 0xFF}):
		return -1 // UTF-16, whose offsets this does not count
	}
	for i < len(data) {
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size <= 1 || !yamlPrintable(r) {
			return i
		}
		i += size
	}
	return -1
}

// yamlPrintable is the set of characters the YAML reader accepts.
func yamlPrintable(r rune) bool {
	switch {
	case r == '\t', r == '\n', r == '\r', r >= 0x20 && r <= 0x7E, r == 0x85,
		r >= 0xA0 && r <= 0xD7FF, r >= 0xE000 && r <= 0xFFFD, r >= 0x10000 && r <= 0x10FFFF:
		return true
	}
	return false
}
