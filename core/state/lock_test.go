package state

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func writeLockFile(t *testing.T, m *Manager, id string, rec any) {
	t.Helper()
	if err := os.MkdirAll(m.sessionsDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	var data []byte
	switch r := rec.(type) {
	case []byte:
		data = r
	default:
		var err error
		if data, err = json.Marshal(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(m.lockPath(id), data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func readLockFile(t *testing.T, m *Manager, id string) lockRecord {
	t.Helper()
	data, err := os.ReadFile(m.lockPath(id))
	if err != nil {
		t.Fatal(err)
	}
	var rec lockRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatalf("lock file %q: %v", data, err)
	}
	return rec
}

// deadPid returns the pid of a process that has exited and been reaped.
func deadPid(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skipf("cannot run true: %v", err)
	}
	pid := cmd.Process.Pid
	if processAlive(pid) {
		t.Skipf("pid %d was reused already", pid)
	}
	return pid
}

func wantLocked(t *testing.T, err error, id string) *LockedError {
	t.Helper()
	var le *LockedError
	if !errors.As(err, &le) {
		t.Fatalf("got %v, want *LockedError", err)
	}
	if le.ID != id {
		t.Errorf("LockedError.ID %q, want %q", le.ID, id)
	}
	return le
}

func TestLockExclusiveInProcess(t *testing.T) {
	m := NewManager(t.TempDir())
	if m.Running("abc123") {
		t.Error("Running before any lock")
	}
	l, err := m.Lock("abc123")
	if err != nil {
		t.Fatal(err)
	}
	checkMode(t, m.lockPath("abc123"), 0o600)
	rec := readLockFile(t, m, "abc123")
	if rec.Pid != os.Getpid() || rec.Host != hostname() || rec.Time.IsZero() {
		t.Errorf("lock record %+v", rec)
	}
	if !m.Running("abc123") {
		t.Error("Running false while locked")
	}

	_, err = m.Lock("abc123")
	le := wantLocked(t, err, "abc123")
	if le.Pid != os.Getpid() || le.Host != hostname() {
		t.Errorf("LockedError %+v", le)
	}
	want := "session abc123 is in use by pid " + strconv.Itoa(os.Getpid()) + " on host " + hostname()
	if err.Error() != want {
		t.Errorf("message %q, want %q", err, want)
	}
	// A second Manager on the same directory sees the same lock.
	if _, err := NewManager(filepath.Dir(m.Root())).Lock("abc123"); err == nil {
		t.Error("second manager took a held lock")
	}

	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(m.lockPath("abc123")); !os.IsNotExist(err) {
		t.Errorf("lock file remains after release: %v", err)
	}
	if m.Running("abc123") {
		t.Error("Running true after release")
	}
	if err := l.Release(); err != nil {
		t.Errorf("second release: %v", err)
	}
	l2, err := m.Lock("abc123")
	if err != nil {
		t.Fatalf("relock: %v", err)
	}
	l2.Release()
}

func TestLockTakesOverDeadPid(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("needs true(1)")
	}
	m := NewManager(t.TempDir())
	pid := deadPid(t)
	writeLockFile(t, m, "dead0001", lockRecord{Pid: pid, Host: hostname(), Time: time.Now()})
	if m.Running("dead0001") {
		t.Error("Running true for a dead holder")
	}
	l, err := m.Lock("dead0001")
	if err != nil {
		t.Fatalf("stale lock not taken over: %v", err)
	}
	defer l.Release()
	if rec := readLockFile(t, m, "dead0001"); rec.Pid != os.Getpid() {
		t.Errorf("lock still names pid %d", rec.Pid)
	}
	if !m.Running("dead0001") {
		t.Error("Running false after takeover")
	}
}

func TestLockConcurrentTakeoverHasOneWinner(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("needs true(1)")
	}
	m := NewManager(t.TempDir())
	pid := deadPid(t)
	for round := range 20 {
		writeLockFile(t, m, "race0001", lockRecord{Pid: pid, Host: hostname(), Time: time.Now()})
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			winners []*Lock
		)
		start := make(chan struct{})
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				l, err := m.Lock("race0001")
				if err != nil {
					var le *LockedError
					if !errors.As(err, &le) {
						t.Errorf("round %d: %v", round, err)
					}
					return
				}
				mu.Lock()
				winners = append(winners, l)
				mu.Unlock()
			}()
		}
		close(start)
		wg.Wait()
		if len(winners) != 1 {
			t.Fatalf("round %d: %d goroutines hold the lock", round, len(winners))
		}
		winners[0].Release()
	}
}

func TestLockOtherHostNotTakenOver(t *testing.T) {
	m := NewManager(t.TempDir())
	writeLockFile(t, m, "host0001", lockRecord{Pid: 1 << 30, Host: "elsewhere.invalid", Time: time.Now()})
	_, err := m.Lock("host0001")
	le := wantLocked(t, err, "host0001")
	if le.Host != "elsewhere.invalid" || le.Pid != 1<<30 {
		t.Errorf("LockedError %+v", le)
	}
	if !strings.Contains(err.Error(), "on host elsewhere.invalid") {
		t.Errorf("message %q", err)
	}
	if !m.Running("host0001") {
		t.Error("Running false for a lock held on another host")
	}
}

func TestLockLivePidWithoutFlockIsHeld(t *testing.T) {
	m := NewManager(t.TempDir())
	// A record without the flock flag (another implementation, or a file
	// written by hand) is judged by its pid alone.
	writeLockFile(t, m, "live0001", map[string]any{"pid": os.Getpid(), "host": hostname(), "time": time.Now()})
	_, err := m.Lock("live0001")
	wantLocked(t, err, "live0001")
	if !m.Running("live0001") {
		t.Error("Running false")
	}
}

func TestLockReusedPidIsTakenOver(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("needs flock")
	}
	m := NewManager(t.TempDir())
	// The record claims a flock that nobody holds: its holder is gone and the
	// pid now belongs to someone else (here: us).
	writeLockFile(t, m, "reus0001", lockRecord{Pid: os.Getpid(), Host: hostname(), Time: time.Now(), Flock: true})
	if m.Running("reus0001") {
		t.Error("Running true for a lock whose flock is free")
	}
	l, err := m.Lock("reus0001")
	if err != nil {
		t.Fatal(err)
	}
	l.Release()
}

func TestLockUnparseable(t *testing.T) {
	m := NewManager(t.TempDir())
	writeLockFile(t, m, "junk0001", []byte("garbage"))
	_, err := m.Lock("junk0001")
	le := wantLocked(t, err, "junk0001")
	if le.Pid != 0 || err.Error() != "session junk0001 is in use by another process" {
		t.Errorf("LockedError %+v: %q", le, err)
	}
	old := time.Now().Add(-time.Minute)
	if err := os.Chtimes(m.lockPath("junk0001"), old, old); err != nil {
		t.Fatal(err)
	}
	if m.Running("junk0001") {
		t.Error("Running true for an old unparseable lock")
	}
	l, err := m.Lock("junk0001")
	if err != nil {
		t.Fatalf("old unparseable lock not taken over: %v", err)
	}
	l.Release()
}

func TestReleaseLeavesForeignLock(t *testing.T) {
	m := NewManager(t.TempDir())
	l, err := m.Lock("frgn0001")
	if err != nil {
		t.Fatal(err)
	}
	// Simulate another process having replaced the lock file.
	os.Remove(m.lockPath("frgn0001"))
	writeLockFile(t, m, "frgn0001", lockRecord{Pid: 1 << 30, Host: "elsewhere.invalid", Time: time.Now()})
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if rec := readLockFile(t, m, "frgn0001"); rec.Host != "elsewhere.invalid" {
		t.Errorf("release removed or changed a lock it did not own: %+v", rec)
	}
}

func TestLockRejectsBadID(t *testing.T) {
	m := NewManager(t.TempDir())
	for _, id := range []string{"", "../x", "a/b", ".x"} {
		if _, err := m.Lock(id); err == nil {
			t.Errorf("Lock(%q) succeeded", id)
		}
		if m.Running(id) {
			t.Errorf("Running(%q) true", id)
		}
	}
}

const lockChildEnv = "VIBETEAM_STATE_TEST_LOCK_DIR"

// TestLockHeldByKilledProcess takes a lock in a child process, checks it is
// honoured while the child lives, and taken over once it is SIGKILLed.
func TestLockHeldByKilledProcess(t *testing.T) {
	if dir := os.Getenv(lockChildEnv); dir != "" {
		if _, err := NewManager(dir).Lock("kill0001"); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(3)
		}
		os.Stdout.WriteString("locked\n")
		time.Sleep(time.Minute)
		os.Exit(4)
	}
	if runtime.GOOS == "windows" {
		t.Skip("needs SIGKILL")
	}
	dir := t.TempDir()
	m := NewManager(dir)
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockHeldByKilledProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), lockChildEnv+"="+dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	sc := bufio.NewScanner(out)
	locked := false
	for sc.Scan() {
		if sc.Text() == "locked" {
			locked = true
			break
		}
	}
	if !locked {
		t.Fatal("child did not take the lock")
	}
	_, err = m.Lock("kill0001")
	if le := wantLocked(t, err, "kill0001"); le.Pid != cmd.Process.Pid {
		t.Errorf("LockedError pid %d, want child %d", le.Pid, cmd.Process.Pid)
	}
	if !m.Running("kill0001") {
		t.Error("Running false while the child holds the lock")
	}
	cmd.Process.Kill()
	cmd.Wait()
	if m.Running("kill0001") {
		t.Error("Running true after the holder was killed")
	}
	l, err := m.Lock("kill0001")
	if err != nil {
		t.Fatalf("lock of killed process not taken over: %v", err)
	}
	l.Release()
}

// A lock whose session was never saved (its process was killed in between)
// is pruned once its holder is gone and it is old enough; a live holder's,
// a fresh one, and a session's own lock are kept.
func TestPruneRemovesOrphanLocks(t *testing.T) {
	t.Parallel()
	m := NewManager(t.TempDir())
	old := time.Now().Add(-time.Minute)
	dead := deadPid(t)
	writeLockFile(t, m, "dead0001", lockRecord{Pid: dead, Host: hostname(), Time: old})
	writeLockFile(t, m, "dead0002", lockRecord{Pid: dead, Host: hostname(), Time: time.Now()}) // fresh
	writeLockFile(t, m, "live0001", lockRecord{Pid: os.Getpid(), Host: hostname(), Time: old})
	writeLockFile(t, m, "host0001", lockRecord{Pid: dead, Host: "elsewhere", Time: old})
	writeLockFile(t, m, "sess0001", lockRecord{Pid: dead, Host: hostname(), Time: old})
	putSession(t, m, "sess0001", StatusFailed, time.Now())
	for _, id := range []string{"dead0001", "live0001", "host0001", "sess0001"} {
		if err := os.Chtimes(m.lockPath(id), old, old); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Prune(10); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]bool{"dead0001": false, "dead0002": true, "live0001": true, "host0001": true, "sess0001": true} {
		_, err := os.Stat(m.lockPath(id))
		if got := err == nil; got != want {
			t.Errorf("lock %s exists: %v, want %v", id, got, want)
		}
	}
	assertSessions(t, m, "sess0001")
}
