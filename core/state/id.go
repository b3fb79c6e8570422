package state

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/vibeteam/vibeteam/internal/suggest"
	"io/fs"
	"os"
	"sort"
	"strings"
)

// idBytes gives 8 hex characters: short enough to type after `vibeteam resume`,
// and 2^32 values make a collision between two concurrent runs negligible.
const idBytes = 4

// maxNearest bounds the suggestions carried by a NotFoundError.
const maxNearest = 5

// randRead is a variable so tests can force collisions.
var randRead = rand.Read

// NotFoundError reports an unknown session id together with the existing ids
// that look most like it, so the CLI can suggest a correction for a typo.
type NotFoundError struct {
	ID      string
	Nearest []string
}

func (e *NotFoundError) Error() string {
	// Quote only what could confuse the message (empty, spaces, slashes).
	msg := fmt.Sprintf("session %s not found", e.ID)
	if !validID(e.ID) {
		msg = fmt.Sprintf("session %q not found", e.ID)
	}
	if len(e.Nearest) > 0 {
		msg += " (did you mean " + strings.Join(e.Nearest, ", ") + "?)"
	}
	return msg
}

// AmbiguousError reports a prefix shared by several sessions.
type AmbiguousError struct {
	Prefix string
	IDs    []string // every session whose id starts with Prefix, sorted
}

func (e *AmbiguousError) Error() string {
	ids := e.IDs
	more := ""
	if len(ids) > maxAmbiguous {
		more = fmt.Sprintf(" and %d more", len(ids)-maxAmbiguous)
		ids = ids[:maxAmbiguous]
	}
	return fmt.Sprintf("session id %s is ambiguous: %s%s", e.Prefix, strings.Join(ids, ", "), more)
}

// maxAmbiguous bounds how many candidates an AmbiguousError names.
const maxAmbiguous = 10

// Resolve maps what a user typed to a session id: the id itself, or any
// prefix of exactly one id. A prefix of several yields an *AmbiguousError,
// one of none a *NotFoundError with the nearest ids.
func (m *Manager) Resolve(arg string) (string, error) {
	if !validID(arg) {
		return "", m.notFound(arg)
	}
	ids, err := m.IDs()
	if err != nil {
		return "", err
	}
	var matches []string
	for _, id := range ids {
		if id == arg {
			// Exact wins, even if the id is also a prefix of a longer one.
			return id, nil
		}
		if strings.HasPrefix(id, arg) {
			matches = append(matches, id)
		}
	}
	switch len(matches) {
	case 0:
		return "", &NotFoundError{ID: arg, Nearest: nearestIDs(arg, ids, maxNearest)}
	case 1:
		return matches[0], nil
	}
	return "", &AmbiguousError{Prefix: arg, IDs: matches}
}

// NewID returns a fresh session id: 8 lowercase hex characters, which need no
// quoting in any shell. An id is never reused while anything of an earlier
// session with that id remains, so a new run never appends to old logs.
func (m *Manager) NewID() (string, error) {
	buf := make([]byte, idBytes)
	for range 100 {
		if _, err := randRead(buf); err != nil {
			return "", fmt.Errorf("generate session id: %w", err)
		}
		id := hex.EncodeToString(buf)
		taken := false
		for _, p := range []string{m.SessionPath(id), m.lockPath(id), m.LogDir(id), m.EventLogPath(id)} {
			_, err := os.Lstat(p)
			switch {
			case err == nil:
				taken = true
			case !errors.Is(err, fs.ErrNotExist):
				return "", fmt.Errorf("generate session id: %w", err)
			}
		}
		if !taken {
			return id, nil
		}
	}
	// Only reachable with a broken random source or billions of sessions.
	return "", errors.New("generate session id: too many collisions")
}

// validID guards every path built from an id: ids come from the command line,
// and "../x" or "a/b" must never escape the sessions directory.
func validID(id string) bool {
	if id == "" || len(id) > 128 || id[0] == '.' || id[0] == '-' {
		return false
	}
	for _, r := range id {
		if !isSafeRune(r) {
			return false
		}
	}
	return true
}

func isSafeRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
		r == '-' || r == '_' || r == '.'
}

// safeFileName maps an arbitrary task id onto a name that is a single path
// element, readable, and stable (the same task always gets the same log).
func safeFileName(s string) string {
	var b strings.Builder
	for _, r := range s {
		if isSafeRune(r) {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	name := b.String()
	// A leading dot would hide the file, and "." or ".." are not files at all.
	if name == "" || name[0] == '.' {
		name = "_" + name
	}
	if len(name) > 120 {
		name = name[:120]
	}
	// Replacing characters can map two task ids onto one name ("a/b", "a_b");
	// a hash of the original keeps their logs apart.
	if name != s {
		sum := sha256.Sum256([]byte(s))
		name += "-" + hex.EncodeToString(sum[:4])
	}
	return name
}

// nearestIDs orders candidates by how likely the user meant them when typing
// want: a shared prefix is the strongest signal (ids are usually abbreviated
// or mistyped at the end), then edit distance.
func nearestIDs(want string, ids []string, n int) []string {
	type cand struct {
		id     string
		prefix int
		dist   int
	}
	cands := make([]cand, 0, len(ids))
	for _, id := range ids {
		if id == want {
			continue
		}
		cands = append(cands, cand{id, commonPrefix(want, id), suggest.Distance(want, id)})
	}
	sort.Slice(cands, func(i, j int) bool {
		a, b := cands[i], cands[j]
		if a.prefix != b.prefix {
			return a.prefix > b.prefix
		}
		if a.dist != b.dist {
			return a.dist < b.dist
		}
		return a.id < b.id
	})
	if len(cands) > n {
		cands = cands[:n]
	}
	out := make([]string, len(cands))
	for i, c := range cands {
		out[i] = c.id
	}
	return out
}

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}
