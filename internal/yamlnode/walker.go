package yamlnode

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/vibeteam/vibeteam/internal/suggest"
)

// What a value must be, as the readers word it ("must be a string"). A
// loader that needs more than a reader gives (a mapping with certain keys)
// writes its own with the same "must be" (see MustBe).
const (
	AString        = "a string"
	ABool          = "true or false"
	AMapping       = "a mapping"
	AList          = "a list"
	AListOfStrings = "a list of strings"
	AMapOfStrings  = "a map of strings"
)

// Messages shared by the loaders' own checks.
const (
	MsgNotEmpty    = "must not be empty"
	MsgKeyNotText  = "a key must be a string"
	MsgBadMerge    = "<< must merge a mapping or a list of mappings"
	msgPositiveDur = "must be a positive duration"
	msgNotNegative = "must not be negative"
	msgSecsRange   = "number of seconds is out of range"
)

// Pair is one entry of a mapping: its key (aliases followed) and its value
// (as written: the readers follow its aliases).
type Pair struct{ Key, Val *yaml.Node }

// Walker walks the node tree of one file and collects its problems. The
// readers (Text, String, Bool, Int, Duration, Seq, Map, Fields, ...) take a
// node and the field path it is read for; each follows aliases, records the
// position of the value in Pos, and on a problem reports it and marks the
// field in Broken. A null (a key with nothing after it) is "not written":
// the zero value, and no problem (NotNull refuses it where a loader must).
type Walker struct {
	File string
	Errs ErrorList
	// Pos maps a field path (stages[0].tasks[1].env) to the position of
	// the value read for it.
	Pos map[string]Pos
	// Broken holds the fields a problem of their own value was reported
	// for (by Fail and the readers), so that later checks of the same
	// field do not report it again in vaguer words.
	Broken map[string]bool
	// Merge expands YAML merge keys ("<<: *defaults") in mappings. Without
	// it "<<" is a key like any other, which Fields reports as unknown.
	Merge bool
	// Exhausted is set when the walk has visited too many nodes (see
	// Deref); the walk should then stop, and its problem is reported.
	Exhausted bool

	visits, maxVisits int
	merging           map[*yaml.Node]bool // mappings being merged, to stop "<<" cycles
}

// NewWalker returns a walker for file, whose text is size bytes long.
// Aliases are followed, so a small file can expand to a huge tree ("billion
// laughs"): the walk stops after a number of nodes in proportion to size,
// far more than any real file has.
func NewWalker(file string, size int) *Walker {
	return &Walker{
		File:      file,
		Pos:       map[string]Pos{},
		Broken:    map[string]bool{},
		maxVisits: 200_000 + 16*size,
		merging:   map[*yaml.Node]bool{},
	}
}

// At is the position of n in the file.
func (w *Walker) At(n *yaml.Node) Pos {
	if n == nil {
		return Pos{File: w.File}
	}
	return Pos{File: w.File, Line: n.Line, Col: n.Column}
}

// Errorf reports a problem at n.
func (w *Walker) Errorf(n *yaml.Node, field, format string, args ...any) {
	w.Errs = append(w.Errs, &Error{Pos: w.At(n), Field: field, Msg: fmt.Sprintf(format, args...)})
}

// Fail reports a problem of field's value at n and marks field broken.
func (w *Walker) Fail(n *yaml.Node, field, format string, args ...any) {
	w.Broken[field] = true
	w.Errorf(n, field, format, args...)
}

// MustBe reports that the value n of field is not what it must be:
// "must be a list of strings". what starts with an article or is a choice
// ("true or false").
func (w *Walker) MustBe(n *yaml.Node, field, what string) {
	w.Fail(n, field, "must be %s", what)
}

// Deref follows aliases and counts the node against the walk's budget. It
// never returns nil.
func (w *Walker) Deref(n *yaml.Node) *yaml.Node {
	orig := n
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 64; i++ {
		n = n.Alias
	}
	if n == nil || n.Kind == yaml.AliasNode {
		// An alias without a target; yaml.v3 rejects those, but a null keeps
		// the walk going if it ever does not.
		n = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null"}
		if orig != nil {
			n.Line, n.Column = orig.Line, orig.Column
		}
	}
	w.visits++
	if w.visits > w.maxVisits && !w.Exhausted {
		w.Exhausted = true
		w.Errorf(n, "", "the file expands to more than %d nodes through aliases; write it out or use fewer aliases", w.maxVisits)
	}
	return n
}

// IsNull reports whether n (aliases already followed) is a null: "~",
// "null", or nothing at all after a key.
func IsNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// NotNull refuses a null where a value is needed: it reports "must be what"
// and returns false. The readers take a null for "not written"; a loader
// that never has calls this first.
func (w *Walker) NotNull(n *yaml.Node, field, what string) bool {
	// Aliases are followed without counting: the reader after this counts.
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 64; i++ {
		n = n.Alias
	}
	if n != nil && IsNull(n) {
		w.Pos[field] = w.At(n)
		w.MustBe(n, field, what)
		return false
	}
	return true
}

// Pairs returns the entries of mapping m (aliases already followed) with
// merge keys expanded when w.Merge is set: keys written in m win over merged
// ones, and earlier merges win over later ones, as YAML specifies. A key that
// is not a scalar and a duplicate key are reported (at field, the mapping's
// path) only when report is set, so a mapping merged into many places is
// reported once, where it is written.
func (w *Walker) Pairs(m *yaml.Node, field string, report bool) []Pair {
	out := make([]Pair, 0, len(m.Content)/2)
	seen := make(map[string]*yaml.Node, len(m.Content)/2)
	var merges []*yaml.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		if w.Exhausted {
			return out
		}
		k, v := w.Deref(m.Content[i]), m.Content[i+1]
		if w.Merge && k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			merges = append(merges, v)
			continue
		}
		if k.Kind != yaml.ScalarNode {
			if report {
				w.Errorf(k, field, MsgKeyNotText)
			}
			continue
		}
		if first, dup := seen[k.Value]; dup {
			if report {
				w.Errorf(k, field, "duplicate key %q (first defined at line %d)", k.Value, first.Line)
			}
			continue
		}
		seen[k.Value] = k
		out = append(out, Pair{k, v})
	}
	if len(merges) == 0 {
		return out
	}
	w.merging[m] = true
	defer delete(w.merging, m)
	for _, v := range merges {
		v = w.Deref(v)
		var sources []*yaml.Node
		switch v.Kind {
		case yaml.MappingNode:
			sources = []*yaml.Node{v}
		case yaml.SequenceNode:
			for _, el := range v.Content {
				sources = append(sources, w.Deref(el))
			}
		}
		for _, src := range sources {
			if src.Kind != yaml.MappingNode {
				if report {
					w.Errorf(src, field, MsgBadMerge)
				}
				continue
			}
			if w.merging[src] {
				continue // merges itself; its own keys are already in
			}
			for _, kv := range w.Pairs(src, field, false) {
				if _, dup := seen[kv.Key.Value]; !dup {
					seen[kv.Key.Value] = kv.Key
					out = append(out, kv)
				}
			}
		}
		if len(sources) == 0 && report {
			w.Errorf(v, field, MsgBadMerge)
		}
	}
	return out
}

// Map reads the mapping n of field: its entries (see Pairs), or nil for a
// null. Anything else is reported as "must be what" (AMapping when what is
// empty), and ok is false.
func (w *Walker) Map(n *yaml.Node, field, what string) (pairs []Pair, ok bool) {
	n = w.Deref(n)
	w.Pos[field] = w.At(n)
	switch {
	case IsNull(n):
		return nil, true
	case n.Kind != yaml.MappingNode:
		w.MustBe(n, field, or(what, AMapping))
		return nil, false
	}
	return w.Pairs(n, field, true), true
}

// Fields reads the mapping n of field, whose keys must be among known: Map,
// then Visit. It returns the keys written, by name (none for a null, which
// is an empty mapping), and ok as Map does.
func (w *Walker) Fields(n *yaml.Node, field, what string, known []string, visit func(kv Pair)) (seen map[string]*yaml.Node, ok bool) {
	pairs, ok := w.Map(n, field, what)
	return w.Visit(pairs, field, known, visit), ok
}

// Visit calls visit for each entry of a mapping at field whose key is among
// known (listed in the order messages show them), in file order, and
// reports every other key with UnknownKey. It returns the keys written, by
// name. The walk stops when w is exhausted.
func (w *Walker) Visit(pairs []Pair, field string, known []string, visit func(kv Pair)) map[string]*yaml.Node {
	seen := make(map[string]*yaml.Node, len(pairs))
	for _, kv := range pairs {
		if w.Exhausted {
			break
		}
		seen[kv.Key.Value] = kv.Key
		if !slices.Contains(known, kv.Key.Value) {
			w.UnknownKey(kv.Key, field, known)
			continue
		}
		visit(kv)
	}
	return seen
}

// UnknownKey reports key k of the mapping at field as one the format does
// not have: `unknown key "promt" (did you mean "prompt"?)`, or with the
// known keys listed when none is near.
func (w *Walker) UnknownKey(k *yaml.Node, field string, known []string) {
	w.Errorf(k, field, "unknown key %q%s", k.Value, Hint(k.Value, known))
}

// UnknownKeyBecause reports key k as unknown, saying why in words that an
// edit distance cannot find: `unknown key "id" (a grimoire and its steps are
// named by "name")`.
func (w *Walker) UnknownKeyBecause(k *yaml.Node, field, why string) {
	w.Errorf(k, field, "unknown key %q (%s)", k.Value, why)
}

// DidYouMean is ` (did you mean "x"?)` for the word of known nearest to
// got (see suggest.Closest), or "" when none is near.
func DidYouMean(got string, known []string) string {
	if s := suggest.Closest(got, known); s != "" {
		return fmt.Sprintf(" (did you mean %q?)", s)
	}
	return ""
}

// Hint is DidYouMean, or when no word is near, ` (known: a, b, c)`.
func Hint(got string, known []string) string {
	if s := DidYouMean(got, known); s != "" {
		return s
	}
	if len(known) == 0 {
		return ""
	}
	return " (known: " + strings.Join(known, ", ") + ")"
}

// OneOf is the message for a value that is none of allowed:
// `must be "a", "b" or "c", got "x"`, with a DidYouMean.
func OneOf(got string, allowed ...string) string {
	return fmt.Sprintf("must be %s, got %q%s", OrList(allowed), got, DidYouMean(got, allowed))
}

// OrList is `"a" or "b"`, `"a", "b" or "c"`.
func OrList(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = strconv.Quote(w)
	}
	if len(q) <= 1 {
		return strings.Join(q, "")
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

// MissingKey is the message for a required key that a mapping lacks; it is
// reported at the mapping, with the mapping's path as the field.
func MissingKey(key string) string {
	return fmt.Sprintf("missing required key %q", key)
}

// Seq reads the list n of field: its elements (aliases not followed yet), or
// nil for a null. Anything else is reported as "must be what" (AList when
// what is empty), and ok is false.
func (w *Walker) Seq(n *yaml.Node, field, what string) (elems []*yaml.Node, ok bool) {
	n = w.Deref(n)
	w.Pos[field] = w.At(n)
	switch {
	case IsNull(n):
		return nil, true
	case n.Kind != yaml.SequenceNode:
		w.MustBe(n, field, or(what, AList))
		return nil, false
	}
	return n.Content, true
}

// List reads the list n of field (see Seq: what names the list in its
// error) into a slice: each element, with its index i and field path
// field[i], is read by elem, which says whether to keep it, until the walk
// is exhausted. A
// null, an empty list or a value that is no list is nil.
func List[T any](w *Walker, n *yaml.Node, field, what string, elem func(i int, el *yaml.Node, field string) (T, bool)) []T {
	elems, _ := w.Seq(n, field, what)
	if elems == nil {
		return nil
	}
	out := make([]T, 0, len(elems))
	for i, el := range elems {
		if w.Exhausted {
			break
		}
		if v, keep := elem(i, el, field+"["+strconv.Itoa(i)+"]"); keep {
			out = append(out, v)
		}
	}
	return out
}

// Mapping follows the aliases of n, the value of field, and reports it as
// not what it must be (what) unless it is a mapping: an element of a list
// of mappings, where a null is a mistake too.
func (w *Walker) Mapping(n *yaml.Node, field, what string) (*yaml.Node, bool) {
	n = w.Deref(n)
	if n.Kind != yaml.MappingNode {
		w.MustBe(n, field, what)
		return n, false
	}
	return n, true
}

// Text reads a value used as text (ids, names, prompts, commands). Any
// scalar is taken as written, so "id: 1" or "name: 2024" need no quotes;
// null is "".
func (w *Walker) Text(n *yaml.Node, field string) (string, bool) {
	n = w.Deref(n)
	w.Pos[field] = w.At(n)
	switch {
	case IsNull(n):
		return "", true
	case n.Kind != yaml.ScalarNode:
		w.MustBe(n, field, AString)
		return "", false
	}
	return n.Value, true
}

// String reads a value that must be written as a string. Arguments and
// environment values are handed to programs verbatim, so a YAML number or
// bool (which may be re-spelled: 0x10, 1e3, True) is refused instead of
// guessed at, and so is a null.
func (w *Walker) String(n *yaml.Node, field string) (string, bool) {
	n = w.Deref(n)
	w.Pos[field] = w.At(n)
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" {
		return n.Value, true
	}
	switch t := n.ShortTag(); {
	case n.Kind == yaml.ScalarNode && n.Style == 0 && (t == "!!int" || t == "!!float" || t == "!!bool"):
		w.Fail(n, field, "must be %s (write %q in quotes)", AString, n.Value)
	default:
		w.MustBe(n, field, AString)
	}
	return "", false
}

// Strings reads a list of strings (AListOfStrings), each element read by
// elem (w.Text or w.String) with the field path "field[i]". A null element
// is refused, and so is every element elem refuses; the others are kept.
func (w *Walker) Strings(n *yaml.Node, field string, elem func(n *yaml.Node, field string) (string, bool)) []string {
	elems, ok := w.Seq(n, field, AListOfStrings)
	if !ok {
		return nil
	}
	var out []string
	for i, el := range elems {
		if w.Exhausted {
			break
		}
		f := field + "[" + strconv.Itoa(i) + "]"
		if !w.NotNull(el, f, AString) {
			continue
		}
		if s, ok := elem(el, f); ok {
			out = append(out, s)
		}
	}
	return out
}

// Env reads a map of environment variables (AMapOfStrings), each value read
// by value (w.Text or w.String) with the field path "field.NAME". A name
// that cannot be one (empty, with "=" or a NUL) is reported at its key. A
// null is nil.
func (w *Walker) Env(n *yaml.Node, field string, value func(n *yaml.Node, field string) (string, bool)) map[string]string {
	pairs, ok := w.Map(n, field, AMapOfStrings)
	if !ok || pairs == nil {
		return nil
	}
	out := make(map[string]string, len(pairs))
	for _, kv := range pairs {
		if w.Exhausted {
			break
		}
		name := kv.Key.Value
		if name == "" || strings.ContainsAny(name, "=\x00") {
			w.Fail(kv.Key, field, "invalid environment variable name %q", name)
			continue
		}
		if s, ok := value(kv.Val, field+"."+name); ok {
			out[name] = s
		}
	}
	return out
}

// Bool reads true or false (ABool); null is false.
func (w *Walker) Bool(n *yaml.Node, field string) (bool, bool) {
	n = w.Deref(n)
	w.Pos[field] = w.At(n)
	if IsNull(n) {
		return false, true
	}
	var b bool
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" || n.Decode(&b) != nil {
		w.MustBe(n, field, ABool)
		return false, false
	}
	return b, true
}

// Int reads a whole number from lo to hi (math.MaxInt for no upper bound);
// null is 0.
func (w *Walker) Int(n *yaml.Node, field string, lo, hi int) (int, bool) {
	n = w.Deref(n)
	w.Pos[field] = w.At(n)
	if IsNull(n) {
		return 0, true
	}
	var i int
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" || n.Decode(&i) != nil {
		w.MustBe(n, field, IntWhat(lo, hi))
		return 0, false
	}
	if i < lo || i > hi {
		w.Fail(n, field, "must be %s", intRange(lo, hi))
		return 0, false
	}
	return i, true
}

// IntWhat is what Int says a value must be: "a whole number, at least 1",
// "a whole number from 1 to 10000".
func IntWhat(lo, hi int) string {
	if hi == math.MaxInt {
		return "a whole number, " + intRange(lo, hi)
	}
	return "a whole number " + intRange(lo, hi)
}

func intRange(lo, hi int) string {
	if hi == math.MaxInt {
		return fmt.Sprintf("at least %d", lo)
	}
	return fmt.Sprintf("from %d to %d", lo, hi)
}

// DurationSpec says which durations a field takes.
type DurationSpec struct {
	// Seconds: a number is a number of seconds ("timeout: 90"). Without
	// it, a number is refused for lack of a unit, except 0.
	Seconds bool
	// Zero: 0 is allowed (it means "none", say); else a duration must be
	// positive. Negative durations are always refused.
	Zero bool
}

// What is what Duration says a value must be.
func (s DurationSpec) What() string {
	if s.Seconds {
		return `a duration like "10m" or a number of seconds`
	}
	return `a duration like "10m"`
}

// Duration reads a duration written as Go writes one ("90s", "10m",
// "1h30m") or, with spec.Seconds, as a number of seconds; null is 0.
func (w *Walker) Duration(n *yaml.Node, field string, spec DurationSpec) (time.Duration, bool) {
	n = w.Deref(n)
	w.Pos[field] = w.At(n)
	if IsNull(n) {
		return 0, true
	}
	sign := func(neg, zero bool) bool {
		switch {
		case neg, zero && !spec.Zero:
			msg := msgNotNegative
			if !spec.Zero {
				msg = msgPositiveDur
			}
			w.Fail(n, field, "%s", msg)
			return false
		}
		return true
	}
	tag := n.ShortTag()
	switch {
	case n.Kind != yaml.ScalarNode:
		w.MustBe(n, field, spec.What())
		return 0, false
	case tag == "!!str" || !spec.Seconds:
		d, err := time.ParseDuration(strings.TrimSpace(n.Value))
		if err != nil {
			how := `write it like "90s", "10m" or "1h30m"`
			if spec.Seconds {
				how += ", or as a number of seconds"
			}
			w.Fail(n, field, "invalid duration %q: %s", n.Value, how)
			return 0, false
		}
		if !sign(d < 0, d == 0) {
			return 0, false
		}
		return d, true
	}
	var secs float64
	switch tag {
	case "!!int":
		var i int64
		if err := n.Decode(&i); err != nil {
			w.Fail(n, field, msgSecsRange)
			return 0, false
		}
		secs = float64(i)
	case "!!float":
		if err := n.Decode(&secs); err != nil || math.IsNaN(secs) {
			w.MustBe(n, field, spec.What())
			return 0, false
		}
	default:
		w.MustBe(n, field, spec.What())
		return 0, false
	}
	if !sign(secs < 0, secs == 0) {
		return 0, false
	}
	if secs*float64(time.Second) >= math.MaxInt64 {
		w.Fail(n, field, msgSecsRange)
		return 0, false
	}
	return time.Duration(secs * float64(time.Second)), true
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
