package render

import (
	"fmt"
	"strings"

	"github.com/vibeteam/vibeteam/internal/excerpt"
)

// When evaluates the `when` of a step. It must render to exactly "true" or
// "false" (spaces around are trimmed): anything else is an error naming the
// step, the expression and what the value was, because a condition that is
// quietly read as false (a typo, a string "yes", an object) skips work
// nobody meant to skip. An empty expression is no condition: true. In a
// dry scope, a condition that depends on a value only the run knows is
// ErrRunTime.
func (s *Scope) When(step, expr string) (bool, error) {
	if strings.TrimSpace(expr) == "" {
		return true, nil
	}
	r := s.newRun(modeText, s.data(step))
	out, err := r.renderLimited("when", expr)
	if err != nil {
		return false, placeErrors(step, fmt.Sprintf("when %q", expr), expr, err)
	}
	s.warn(step, fmt.Sprintf("when %q", expr), expr, *r.warnings)
	if r.dry != nil && *r.dry.pending {
		return false, ErrRunTime
	}
	switch strings.TrimSpace(out) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("step %q: when %q: must be true or false, got %s", step, expr, describe(r.printed, out))
}

// describe names what a `when` rendered to: the type of its one value, or
// "text" when several values or literal text made it up.
func describe(printed []printedValue, out string) string {
	t := strings.TrimSpace(out)
	kind := "text"
	if len(printed) == 1 && strings.TrimSpace(printed[0].text) == t {
		kind = printed[0].kind
	}
	if t == "" {
		if kind == "null" {
			return "null (an empty value)"
		}
		return kind + " (empty)"
	}
	const max = 60
	t = excerpt.Runes(t, max, "...")
	if kind == "string" || kind == "text" {
		return fmt.Sprintf("%s %q", kind, t)
	}
	return kind + " " + t
}
