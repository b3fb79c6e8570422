package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestLongBeadTextReachesAScript: a bead description over 128 KiB, the
// most Linux takes in one argument, reaches a script step whole.
func TestLongBeadTextReachesAScript(t *testing.T) {
	t.Parallel()
	p := newBeadProject(t)
	long := strings.Repeat("abcdefgh", 200<<10/8) // 200 KiB
	data, _ := json.Marshal(map[string]any{"id": "bd-6", "title": "Long", "status": "open", "description": long})
	p.write("bead.json", string(data))
	p.write(".vibeteam/grimoires/long.yaml", `name: long
steps:
  - name: count
    type: script
    command: echo {{.bead.description}} | wc -c
`)
	r := p.exec("run", "long", "--bead-file", "bead.json")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, firstLines(r.stderr, 10))
	}
	s := p.only()
	if got := strings.TrimSpace(s.Runs["0"].Output); got != "204801" {
		t.Errorf("the script saw %s bytes, want 204801", got)
	}
}
