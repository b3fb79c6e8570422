package yamlnode

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/vibeteam/vibeteam/internal/source"
)

// UTF8BOM is the byte order mark a file may start with.
var UTF8BOM = []byte{0xEF, 0xBB, 0xBF}

// MsgEmptyFile is the problem of a file with nothing in it.
const MsgEmptyFile = "file is empty"

// SafeDecode is dec.Decode(n) with a panic of the YAML parser turned into an
// error: yaml.v3 has panicked on malformed input before (CVE-2022-28948), and
// a bad file must never crash the program.
func SafeDecode(dec *yaml.Decoder, n *yaml.Node) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml: cannot parse file: %v", r)
		}
	}()
	return dec.Decode(n)
}

// SafeUnmarshal is yaml.Unmarshal into a node, with a panic turned into an
// error as SafeDecode does.
func SafeUnmarshal(data []byte, n *yaml.Node) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml: cannot parse file: %v", r)
		}
	}()
	return yaml.Unmarshal(data, n)
}

// LineCounter turns byte offsets into 1-based lines and columns, counting
// columns in characters as yaml.v3 does (a tab or an "é" is one column). It
// is fastest when asked about offsets in increasing order, as a parse does.
type LineCounter struct {
	data           []byte
	start          int // a leading byte order mark is not a column
	off, line, col int // the position of data[off]
}

// NewLineCounter returns a LineCounter for data.
func NewLineCounter(data []byte) *LineCounter {
	c := &LineCounter{data: data}
	if bytes.HasPrefix(data, UTF8BOM) {
		c.start = len(UTF8BOM)
	}
	c.off, c.line, c.col = c.start, 1, 1
	return c
}

// Pos is the line and column of the character at off; off = len(data) is
// the end of the input.
func (c *LineCounter) Pos(off int) (line, col int) {
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

// SyntaxError turns an error of yaml.v3 on data, such as "yaml: line 3: did
// not find expected key", into an Error at line 3 of file reading "invalid
// YAML: did not find expected key": yaml.v3 only reports errors as text.
// Errors that cannot be placed keep only the file name.
func SyntaxError(err error, file string, data []byte) *Error {
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
		if last, _ := NewLineCounter(data).Pos(len(data)); pos.Line > last {
			pos.Line, pos.Col = last, 0
		}
	case yamlAliasRE.MatchString(msg):
		if off := source.AliasOffset(data, yamlAliasRE.FindStringSubmatch(msg)[1]); off >= 0 {
			pos.Line, pos.Col = NewLineCounter(data).Pos(off)
		}
	case slices.Contains(yamlReaderProblems, msg):
		if off := yamlBadChar(data); off >= 0 {
			pos.Line, pos.Col = NewLineCounter(data).Pos(off)
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
	case bytes.HasPrefix(data, UTF8BOM):
		i = len(UTF8BOM)
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
