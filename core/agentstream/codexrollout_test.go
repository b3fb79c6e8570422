package agentstream

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestCodexSandboxDenials(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	dir := filepath.Join(home, "sessions", "2026", "11", "23")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	rollout := `{"timestamp":"2026-11-23T10:00:00.000Z","type":"session_meta","payload":{"id":"th-1"}}
{"timestamp":"2026-11-23T10:00:01.000Z","type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"touch x\"}","call_id":"c1"}}
{"timestamp":"2026-11-23T10:00:02.000Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"Chunk ID: 1\nProcess exited with code 1\nOutput:\ntouch: cannot touch 'x': Read-only file system\n"}}
{"timestamp":"2026-11-23T10:00:03.000Z","type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"ls\"}","call_id":"c2"}}
{"timestamp":"2026-11-23T10:00:04.000Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c2","output":"Process exited with code 0\nOutput:\nx\n"}}
{"timestamp":"2026-11-23T10:00:05.000Z","type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"false\"}","call_id":"c3"}}
{"timestamp":"2026-11-23T10:00:06.000Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c3","output":"Process exited with code 1\nOutput:\n"}}
not json
`
	if err := os.WriteFile(filepath.Join(dir, "rollout-2026-11-23T23-44-32-th-1.jsonl"), []byte(rollout), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	got := CodexSandboxDenials(home, "th-1", start)
	if len(got) != 1 || got[0].Tool != "exec_command" || string(got[0].Input) != `{"cmd":"touch x"}` || got[0].Message != "touch: cannot touch 'x': Read-only file system" {
		t.Errorf("denials: %+v", got)
	}
	// A continuation started after the refusal does not see it again.
	if d := CodexSandboxDenials(home, "th-1", start.Add(2500*time.Millisecond)); d != nil {
		t.Errorf("an earlier run's refusal counted: %+v", d)
	}
	for _, id := range []string{"th-2", "", "*", "../x"} {
		if d := CodexSandboxDenials(home, id, start); d != nil {
			t.Errorf("thread %q: %+v", id, d)
		}
	}
	if d := CodexSandboxDenials("", "th-1", start); d != nil {
		t.Errorf("no home: %+v", d)
	}
}

// A call's output of any length (a cat of a large file) does not end the
// reading: the refusals after it are found.
func TestCodexSandboxDenialsAfterAHugeOutput(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	dir := filepath.Join(home, "sessions", "2026", "11", "23")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	huge := `{"timestamp":"2026-11-23T10:00:00.500Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c0","output":"` + strings.Repeat("line of a big file\\n", 1<<20) + `"}}`
	rollout := huge + "\n" + `{"timestamp":"2026-11-23T10:00:01.000Z","type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"touch x\"}","call_id":"c1"}}
{"timestamp":"2026-11-23T10:00:02.000Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"Process exited with code 1\nOutput:\ntouch: cannot touch 'x': Read-only file system\n"}}
`
	if err := os.WriteFile(filepath.Join(dir, "rollout-2026-11-23T23-44-32-th-1.jsonl"), []byte(rollout), 0o644); err != nil {
		t.Fatal(err)
	}
	got := CodexSandboxDenials(home, "th-1", time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC))
	if len(got) != 1 || got[0].Tool != "exec_command" {
		t.Errorf("denials after a %d MB line: %+v", len(huge)>>20, got)
	}
}
