package state

import (
	"os"
	"regexp"
	"testing"
)

func TestNewIDFormat(t *testing.T) {
	m := NewManager(t.TempDir())
	re := regexp.MustCompile(`^[0-9a-f]{8}$`)
	seen := map[string]bool{}
	for range 500 {
		id, err := m.NewID()
		if err != nil {
			t.Fatal(err)
		}
		if !re.MatchString(id) || !validID(id) {
			t.Fatalf("bad id %q", id)
		}
		if seen[id] {
			t.Fatalf("duplicate id %q", id)
		}
		seen[id] = true
	}
}

func TestNewIDRetriesOnCollision(t *testing.T) {
	m := NewManager(t.TempDir())
	if err := m.Save(newSession("00000000", StatusCompleted)); err != nil {
		t.Fatal(err)
	}
	// A lock without a session file (a run being set up) also reserves an id.
	os.WriteFile(m.lockPath("01010101"), []byte("{}"), 0o600)
	seq := [][]byte{{0, 0, 0, 0}, {1, 1, 1, 1}, {0xde, 0xad, 0xbe, 0xef}}
	calls := 0
	randRead = func(b []byte) (int, error) {
		copy(b, seq[calls])
		calls++
		return len(b), nil
	}
	defer func() { randRead = defaultRandRead }()
	id, err := m.NewID()
	if err != nil {
		t.Fatal(err)
	}
	if id != "deadbeef" || calls != 3 {
		t.Errorf("got %q after %d draws", id, calls)
	}
}

var defaultRandRead = randRead

func TestNearestIDs(t *testing.T) {
	ids := []string{"zzzzzzzz", "abcd0000", "abce1234", "abcd1235", "abcd1234", "bbcd1234"}
	got := nearestIDs("abcd1234", ids, 3)
	want := []string{"abcd1235", "abcd0000", "abce1234"}
	if len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("got %v, want %v", got, want)
	}
	if got := nearestIDs("x", nil, 5); len(got) != 0 {
		t.Errorf("got %v", got)
	}
}
