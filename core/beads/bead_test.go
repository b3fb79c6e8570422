package beads

import (
	"slices"
	"strings"
	"testing"
)

func TestParseBeadShapes(t *testing.T) {
	t.Parallel()
	for _, data := range []string{
		`[{"id":"bd-1","title":"T","labels":["a"]}]`,                                      // bd 1.0
		`{"id":"bd-1","title":"T","labels":["a"]}`,                                        // older bd
		"\n  [\n {\"id\":\"bd-1\",\"title\":\"T\",\"labels\":[\"a\"]}\n]\n",               // as printed
		"Note: a newer bd is out\n[{\"id\":\"bd-1\",\"title\":\"T\",\"labels\":[\"a\"]}]", // a notice first
		`{"schema_version":1,"contract_version":1,"data":[{"id":"bd-1","title":"T","labels":["a"]}],"pagination":null}`,
	} {
		b, err := parseBead([]byte(data))
		if err != nil || b.ID() != "bd-1" || b.Title() != "T" || !slices.Equal(b.Labels(), []string{"a"}) {
			t.Errorf("%s: %v %v", data, b, err)
		}
	}
	for data, want := range map[string]string{
		``:                        "printed no JSON",
		`no JSON here`:            "printed no JSON",
		`[]`:                      "want one bead, got 0",
		`[{"id":"a"},{"id":"b"}]`: "want one bead, got 2",
		`["bd-1"]`:                "want a bead, got a string",
		`[{"id":"bd-1"}`:          "printed invalid JSON",
		`{"schema_version":1,"data":null,"error":{"kind":"not_found","message":"no issue found matching \"x\""}}`: `reported an error: no issue found matching "x"`,
	} {
		if _, err := parseBead([]byte(data)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %s", data, err, want)
		}
	}
}

func TestParseBeads(t *testing.T) {
	t.Parallel()
	for data, want := range map[string][]string{
		`[]`:                            nil,
		`null`:                          nil,
		`[{"id":"bd-1"},{"id":"bd-2"}]`: {"bd-1", "bd-2"},
		`{"schema_version":1,"data":[{"id":"bd-3"}]}`: {"bd-3"},
	} {
		list, err := parseBeads([]byte(data))
		if err != nil || list == nil || !slices.Equal(ids(list), want) {
			t.Errorf("%s: %v %v", data, list, err)
		}
	}
	for _, data := range []string{`{"id":"bd-1"}`, `[1]`, `[{"id":"bd-1"},"x"]`} {
		if _, err := parseBeads([]byte(data)); err == nil {
			t.Errorf("%s: no error", data)
		}
	}
}

func TestOpenBlockers(t *testing.T) {
	t.Parallel()
	b := Bead{"id": "bd-1", "dependencies": []any{
		// bd 1.0
		map[string]any{"id": "bd-2", "status": "open", "dependency_type": "blocks"},
		map[string]any{"id": "bd-3", "status": "closed", "dependency_type": "blocks"},
		map[string]any{"id": "bd-4", "status": "open", "dependency_type": "related"},
		map[string]any{"id": "bd-6", "status": "open", "dependency_type": "parent-child"},
		map[string]any{"id": "bd-7", "status": "tombstone", "dependency_type": "blocks"},
		map[string]any{"id": "bd-8", "status": "blocked"}, // no kind: blocks
		// older bd: the edge record
		map[string]any{"issue_id": "bd-1", "depends_on_id": "bd-5", "type": "blocks", "status": "in_progress"},
		map[string]any{"issue_id": "bd-1", "depends_on_id": "bd-9", "type": "blocks"},
		map[string]any{"issue_id": "bd-1", "depends_on_id": "bd-10", "type": "discovered-from"},
		map[string]any{"issue_id": "bd-11", "depends_on_id": "bd-1", "type": "blocks"}, // bd-11's edge
		"bd-12", nil, map[string]any{"status": "open"}, // not dependencies
	}}
	want := []string{"bd-2 (open)", "bd-8 (blocked)", "bd-5 (in_progress)", "bd-9 (status unknown)"}
	if got := b.OpenBlockers(); !slices.Equal(got, want) {
		t.Errorf("open blockers:\n got %v\nwant %v", got, want)
	}
	if got := len(b.Blockers()); got != 6 {
		t.Errorf("%d blockers, want 6", got)
	}
	for _, b := range []Bead{{}, {"dependencies": "bd-2"}, {"dependencies": []any{}}} {
		if got := b.OpenBlockers(); got != nil {
			t.Errorf("%v: %v", b, got)
		}
	}
}

func TestAccessorsOfOddBeads(t *testing.T) {
	t.Parallel()
	b := Bead{"id": 12, "title": nil, "labels": []any{"x", 3, "grimoire:y"}, "issue_type": []any{}}
	if b.ID() != "" || b.Title() != "" || b.Type() != "" || !slices.Equal(b.Labels(), []string{"x", "grimoire:y"}) {
		t.Errorf("%q %q %q %v", b.ID(), b.Title(), b.Type(), b.Labels())
	}
}
