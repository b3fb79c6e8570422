package runner

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	buildOnce sync.Once
	faketui   string
	buildErr  error
)

// fakeTUI builds testdata/faketui once per test binary.
func fakeTUI(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "faketui")
		if err != nil {
			buildErr = err
			return
		}
		faketui = filepath.Join(dir, "faketui")
		out, err := exec.Command("go", "build", "-o", faketui, "../../testdata/faketui").CombinedOutput()
		if err != nil {
			buildErr = err
			t.Log(string(out))
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return faketui
}

func TestTerminalAnswersCursorQueryAndDetectsStates(t *testing.T) {
	bin := fakeTUI(t)
	dir := t.TempDir()
	rec := filepath.Join(dir, "rec")
	var mu sync.Mutex
	var seen []Detection
	var raw bytes.Buffer
	var term *Terminal
	started := make(chan struct{}) // term is set: the first state may come sooner
	sent := false
	term, err := StartTerminal(Spec{Command: bin, Args: []string{"-record", rec, "-work", "200ms", "-exit-after", "1"}},
		TerminalOptions{
			RawLog: &lockedBuffer{b: &raw},
			States: []StatePattern{
				{Name: "working", Pattern: regexp.MustCompile(`esc to interrupt`)},
				{Name: "interaction_idle", Pattern: regexp.MustCompile(`(?m)^│ >\s*$`)},
			},
			OnState: func(d Detection) {
				mu.Lock()
				seen = append(seen, d)
				first := !sent && d.State == "interaction_idle"
				if first {
					sent = true
				}
				mu.Unlock()
				if first {
					go func() { <-started; _ = term.Send("hello\r") }()
				}
			},
		})
	if err != nil {
		t.Fatal(err)
	}
	close(started)
	select {
	case <-term.Done():
	case <-time.After(60 * time.Second):
		term.Stop(time.Second)
		t.Fatalf("faketui did not finish; screen:\n%s", term.Screen())
	}
	if res := term.Result(); !res.Success() {
		t.Fatalf("faketui ended %+v (exit 4 means the cursor query was not answered)\n%s", res, term.Screen())
	}
	b, _ := os.ReadFile(rec)
	if string(b) != "line:hello\n" {
		t.Errorf("faketui received %q", b)
	}
	mu.Lock()
	defer mu.Unlock()
	var states []string
	for _, d := range seen {
		if d.State != "" && (len(states) == 0 || states[len(states)-1] != d.State) {
			states = append(states, d.State)
		}
	}
	if strings.Join(states, ",") != "interaction_idle,working" && !strings.HasPrefix(strings.Join(states, ","), "interaction_idle,working") {
		t.Errorf("state sequence %v, want idle then working", states)
	}
	for i := 1; i < len(seen); i++ {
		if seen[i].Screen == seen[i-1].Screen {
			t.Errorf("the same screen was reported twice (seq %d)", seen[i].Seq)
		}
	}
	if !strings.Contains(raw.String(), "faketui") {
		t.Errorf("raw log misses output")
	}
}

func TestTerminalStopKillsGroup(t *testing.T) {
	term, err := StartTerminal(Spec{Command: "sh", Args: []string{"-c", "trap '' TERM; sleep 60 & sleep 60"}}, TerminalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer term.Kill()
	// Stop once the shell has forked, which it does after setting the trap.
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if pids, _ := GroupMembers(term.Pid()); len(pids) >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the shell never forked")
		}
	}
	start := time.Now()
	term.Stop(300 * time.Millisecond)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("stop took %s", d)
	}
	if groupAlive(term.Pid()) {
		t.Error("process group still alive after Stop")
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  *bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func TestQueriesAreFoundAcrossReads(t *testing.T) {
	q := "xx\x1b[6n yy \x1b[1mbold\x1b[0m \x1b]11;?\x1b\\ \x1b[?6n \x1b[>c \x1b[0c \x1b]10;?\x07 \x1b[2;5n zz"
	want := []Query{QueryCursor, QueryBackground, QuerySecondaryDA, QueryPrimaryDA, QueryForeground}
	wantText := StripString(q)
	if strings.ContainsRune(wantText, 0x1b) || !strings.HasPrefix(wantText, "xx yy bold") || !strings.HasSuffix(wantText, "zz") {
		t.Fatalf("stripped %q", wantText)
	}
	for split := 0; split <= len(q); split++ {
		var got []Query
		s := Stripper{OnQuery: func(q Query) { got = append(got, q) }}
		text := s.Strip(nil, []byte(q[:split]))
		text = s.Strip(text, []byte(q[split:]))
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("split at %d: queries %v, want %v", split, got, want)
		}
		if string(text) != wantText {
			t.Errorf("split at %d: text %q", split, text)
		}
	}
}
