// Package beads reads and updates beads, the issues of the beads tracker,
// through its bd CLI (or a JSON file), and chooses the grimoire a bead runs.
//
// # What bd prints
//
// `bd show ID --json` (github.com/steveyegge/beads; cmd/bd/show.go)
// collects one types.IssueDetails per id asked for and prints the list, so
// bd 1.0 prints an array holding one object for one id. Older versions
// printed the object itself. Both are accepted; so is the envelope
// {"schema_version":1,"data":[...]} of bd's machine output with
// BD_JSON_ENVELOPE=1. `bd create --json` prints the bead with
// "schema_version": 1 among its fields, which is no envelope. An error is
// {"error":"…","schema_version":1} on stdout, the error a string.
//
// The object is the issue with the fields bd keeps (id, title,
// description, design, acceptance_criteria, notes, status, priority,
// issue_type, assignee, created_at, close_reason, ...; internal/types/
// types.go, Issue) plus labels and dependencies; bd 1.0.5 omits every empty
// one, and prints dependent_count and comment_count instead of dependents
// and comments. A Bead keeps them all, as decoded; templates see the
// omitted ones of the README's list as empty (render's bead view).
//
// Dependencies, bd 1.0: each is the other issue, with its own fields, and
// the kind of edge (internal/types/types.go, IssueWithDependencyMetadata:
// Issue embedded, DependencyType `json:"dependency_type"`):
//
//	"dependencies": [{"id": "bd-2", "title": "…", "status": "open", "priority": 1,
//	                  "issue_type": "task", "dependency_type": "blocks"}, …]
//
// "dependencies" are the issues this one depends on (for "blocks": its
// blockers); "dependents" are those depending on it. Kinds include blocks,
// parent-child, related, discovered-from, conditional-blocks and waits-for;
// `bd ready` holds an issue back for an open "blocks" dependency.
//
// Dependencies, older bd and its JSONL export: the edge record itself
// (internal/types/types.go, Dependency), without the other issue's status:
//
//	"dependencies": [{"issue_id": "bd-3", "depends_on_id": "bd-2", "type": "blocks",
//	                  "created_at": "…", "created_by": "…"}]
//
// OpenBlockers reads both; a blocker whose status the bead does not carry
// is taken as open ("status unknown"), and Client.OpenBlockers looks it up.
package beads

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Bead is one issue with every field bd gives (id, title, description,
// design, acceptance_criteria, notes, status, priority, issue_type,
// labels, dependencies, assignee, ...): templates read them as .bead.*.
type Bead map[string]any

// Statuses of a bead that vibeteam sets or reads. A run picked up sets
// in_progress; a completed one closes the bead; a blocked one, or one
// waiting for review, sets blocked; a cancelled one sets open again.
const (
	StatusOpen       = "open"
	StatusInProgress = "in_progress"
	StatusBlocked    = "blocked"
	StatusClosed     = "closed"
)

// depBlocks is the kind of dependency that holds a bead back; a child
// depends on its epic with depParentChild.
const (
	depBlocks      = "blocks"
	depParentChild = "parent-child"
)

func (b Bead) str(key string) string {
	s, _ := b[key].(string)
	return s
}

// ID is the bead's id.
func (b Bead) ID() string { return b.str("id") }

// Title is the bead's title.
func (b Bead) Title() string { return b.str("title") }

// Type is the bead's issue_type (feature, bug, task, ...).
func (b Bead) Type() string { return b.str("issue_type") }

// Status is the bead's status (open, in_progress, blocked, closed, ...).
func (b Bead) Status() string { return b.str("status") }

// Assignee is who the bead is assigned to ("" for nobody).
func (b Bead) Assignee() string { return b.str("assignee") }

// CloseReason is why the bead was closed.
func (b Bead) CloseReason() string { return b.str("close_reason") }

// Priority is the bead's priority as text ("-" when bd gives none).
func (b Bead) Priority() string {
	switch p := b["priority"].(type) {
	case float64:
		return fmt.Sprintf("%g", p)
	case int:
		return fmt.Sprint(p)
	}
	return "-"
}

// Parent is the id of the bead's parent (an epic), from bd ready's
// "parent" or a parent-child dependency in either shape; "" for none.
func (b Bead) Parent() string {
	if p := b.str("parent"); p != "" {
		return p
	}
	list, _ := b["dependencies"].([]any)
	for _, d := range list {
		dep, _ := d.(map[string]any)
		str := func(k string) string { s, _ := dep[k].(string); return s }
		if str("dependency_type") != depParentChild && str("type") != depParentChild {
			continue
		}
		if id := str("depends_on_id"); id != "" {
			return id
		}
		return str("id")
	}
	return ""
}

// HasDependents reports whether other beads depend on this one (bd's
// dependent_count), so that its closing may make one ready; true when bd
// does not say.
func (b Bead) HasDependents() bool {
	n, ok := b["dependent_count"].(float64)
	return !ok || n > 0
}

// Labels are the bead's labels.
func (b Bead) Labels() []string {
	var out []string
	if list, ok := b["labels"].([]any); ok {
		for _, l := range list {
			if s, ok := l.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

// Blocker is a bead that blocks another: its id, and its status as the
// blocked bead tells it ("" when it does not, as older bd).
type Blocker struct {
	ID, Status string
}

// String is "bd-2 (open)", or "bd-2 (status unknown)".
func (bl Blocker) String() string {
	s := bl.Status
	if s == "" {
		s = "status unknown"
	}
	return fmt.Sprintf("%s (%s)", bl.ID, s)
}

// done: a blocker in this status no longer blocks. Closed is done; so is a
// deleted issue (bd keeps it as a tombstone).
func done(status string) bool { return status == StatusClosed || status == "tombstone" }

// Blockers are the bead's "blocks" dependencies, open or not, in both
// shapes bd writes them (see the package comment). An entry without a kind
// is taken as "blocks", bd's default kind.
func (b Bead) Blockers() []Blocker {
	list, _ := b["dependencies"].([]any)
	var out []Blocker
	self := b.ID()
	for _, d := range list {
		dep, ok := d.(map[string]any)
		if !ok {
			continue
		}
		str := func(k string) string { s, _ := dep[k].(string); return s }
		typ := str("dependency_type")
		if typ == "" {
			typ = str("type")
		}
		if typ != "" && typ != depBlocks {
			continue
		}
		id := str("depends_on_id") // the edge record: issue_id depends on depends_on_id
		if id == "" {
			id = str("id")
		} else if from := str("issue_id"); from != "" && self != "" && from != self {
			continue // an edge of another issue
		}
		if id == "" || id == self {
			continue
		}
		out = append(out, Blocker{ID: id, Status: str("status")})
	}
	return out
}

// OpenBlockers names the beads that block this one and are not closed, as
// "id (status)"; one whose status the bead does not carry (older bd) is
// named "id (status unknown)" and counted as open. Client.OpenBlockers asks
// bd for those. The caller refuses the bead, or runs it anyway when told to.
func (b Bead) OpenBlockers() []string {
	var out []string
	for _, bl := range b.Blockers() {
		if !done(bl.Status) {
			out = append(out, bl.String())
		}
	}
	return out
}

// parseBead reads bd's JSON for one bead: an array holding it (bd 1.0), the
// object itself (older bd), or either inside a {"data": ...} envelope.
func parseBead(data []byte) (Bead, error) {
	v, err := decodeJSON(data)
	if err != nil {
		return nil, err
	}
	switch v := v.(type) {
	case map[string]any:
		return v, nil
	case []any:
		if len(v) != 1 {
			return nil, fmt.Errorf("want one bead, got %d", len(v))
		}
		if m, ok := v[0].(map[string]any); ok {
			return m, nil
		}
		return nil, fmt.Errorf("want a bead, got %s", jsonKind(v[0]))
	}
	return nil, fmt.Errorf("want a bead, got %s", jsonKind(v))
}

// parseBeads reads bd's JSON for a list of beads (bd ready --json): an
// array of objects, possibly in a {"data": ...} envelope; null is none.
func parseBeads(data []byte) ([]Bead, error) {
	v, err := decodeJSON(data)
	if err != nil {
		return nil, err
	}
	if v == nil {
		return []Bead{}, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("want a list of beads, got %s", jsonKind(v))
	}
	out := make([]Bead, 0, len(list))
	for i, el := range list {
		m, ok := el.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("item %d is %s, not a bead", i, jsonKind(el))
		}
		out = append(out, m)
	}
	return out, nil
}

// decodeJSON decodes bd's output: one JSON value, after any lines of text
// bd printed before it (a notice, a hint), unwrapped from the envelope
// {"schema_version": 1, "data": ...} when it is one.
func decodeJSON(data []byte) (any, error) {
	data = bytes.TrimSpace(data)
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		for len(data) > 0 && data[0] != '[' && data[0] != '{' {
			i := bytes.IndexByte(data, '\n')
			if i < 0 {
				data = nil
				break
			}
			data = bytes.TrimSpace(data[i+1:])
		}
		if len(data) == 0 {
			return nil, errors.New("printed no JSON")
		}
		if err := json.Unmarshal(data, &v); err != nil {
			return nil, fmt.Errorf("printed invalid JSON: %v", err)
		}
	}
	if m, ok := v.(map[string]any); ok {
		// bd's error: {"error":"…","schema_version":1} (a string; an
		// object {"message": …} in some versions), or inside the envelope
		// {"schema_version":1,"data":{"error":"…"}}.
		if msg, isErr := errorOf(m); isErr {
			return nil, fmt.Errorf("reported an error: %s", msg)
		}
		// The envelope {"schema_version":1,"data":…}. An object with
		// schema_version and no data is a bead itself: bd create --json
		// prints the bead with "schema_version": 1 among its fields.
		if d, env := m["data"]; env {
			if _, sv := m["schema_version"]; sv {
				if dm, ok := d.(map[string]any); ok {
					if msg, isErr := errorOf(dm); isErr {
						return nil, fmt.Errorf("reported an error: %s", msg)
					}
				}
				return d, nil
			}
		}
	}
	return v, nil
}

// errorOf reads bd's error object: "error" a string, or an object with a
// message, beside schema_version and nothing that makes it a bead (an id).
func errorOf(m map[string]any) (string, bool) {
	e, ok := m["error"]
	if !ok {
		return "", false
	}
	if _, bead := m["id"]; bead {
		return "", false
	}
	switch e := e.(type) {
	case string:
		return e, true
	case map[string]any:
		msg, _ := e["message"].(string)
		return msg, true
	}
	return "", false
}
