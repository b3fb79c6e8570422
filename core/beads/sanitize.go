package beads

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// maxSafeID bounds a sanitized id, which names a directory and a branch.
const maxSafeID = 80

// SanitizeID makes a bead id one path component and one component of a
// git branch name (vibeteam/<id>), readable: "bd-12" and "vt.7" stay as
// they are, "proj/x y" is "proj-x-y".
//
// Letters, digits, ".", "_" and "-" are kept; every run of anything else
// (a space, "/", "\", ":", "~", "^", "?", "*", "[", "@{", a control
// character, a non-ASCII letter) is one "-". Then what git check-ref-format
// refuses in a component is rewritten: ".." is ".", a leading or trailing
// "." or "-" is dropped, a trailing ".lock" is "-lock". An id that keeps
// nothing is "bead-" and a hash of it, and a long one is cut, with a hash
// of the whole, so that different ids stay apart.
func SanitizeID(id string) string {
	var b strings.Builder
	dash := false
	for i := 0; i < len(id); i++ {
		c := id[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' {
			b.WriteByte(c)
			dash = false
		} else if !dash {
			b.WriteByte('-')
			dash = true
		}
	}
	s := b.String()
	for strings.Contains(s, "..") {
		s = strings.ReplaceAll(s, "..", ".")
	}
	s = strings.Trim(s, ".-")
	if s == "" {
		return "bead-" + shortHash(id)
	}
	if len(s) > maxSafeID {
		s = strings.TrimRight(s[:maxSafeID-9], ".-") + "-" + shortHash(id)
	}
	if strings.HasSuffix(s, ".lock") {
		s = strings.TrimSuffix(s, ".lock") + "-lock"
	}
	return s
}

func shortHash(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:4])
}
