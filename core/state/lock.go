package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/vibeteam/vibeteam/core/vocab"
)

// staleUnparsedAge is how long an unreadable lock file is presumed to belong
// to a process still writing it. A real holder writes its record immediately
// after creating the file, so only a process killed in between leaves one
// unreadable for longer.
const staleUnparsedAge = 10 * time.Second

// orphanLockAge is how old a lock without a session file must be before
// Prune removes it. A new session is saved right after its lock is taken, so
// only a process killed in between leaves one this old; the age is a margin
// on top of the check that its holder is gone.
const orphanLockAge = 5 * time.Second

// maxLockAttempts bounds how often Lock retries when the lock file changes
// under it (a concurrent takeover or release).
const maxLockAttempts = 20

var errFlockUnsupported = errors.New("flock not supported")

// lockRecord is the content of <root>/sessions/<id>.lock. It names the holder
// so that a lock left by a crash can be recognised and taken over, and so the
// user can be told who holds a live one.
type lockRecord struct {
	Pid  int       `json:"pid"`
	Host string    `json:"host"`
	Time time.Time `json:"time"`
	// Flock records that the holder also holds flock(2) on the file. A free
	// flock then proves the holder is gone even when its pid has since been
	// reused by an unrelated process.
	Flock bool `json:"flock,omitempty"`
}

// LockedError reports a session held by a live process.
type LockedError struct {
	ID    string
	Pid   int
	Host  string
	Since time.Time // when the holder took the lock; zero if unknown
}

// Code is usage (exit 2): the person waits for the other process, or
// stops it.
func (e *LockedError) Code() int { return vocab.ExitUsage }

func (e *LockedError) Error() string {
	if e.Pid <= 0 {
		return fmt.Sprintf("session %s is in use by another process", e.ID)
	}
	return fmt.Sprintf("session %s is in use by pid %d on host %s", e.ID, e.Pid, e.Host)
}

// Lock is a held session lock. It keeps the lock file open for as long as it
// is held, which is what keeps the flock.
type Lock struct {
	mu   sync.Mutex
	path string
	f    *os.File
}

func hostname() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "unknown"
	}
	return h
}

// Lock takes the session's lock so that no second process runs or resumes it
// at the same time. A lock left by a dead process on this host is taken over;
// one held by a live process, or by any process on another host (whose pid
// cannot be checked from here), yields a *LockedError.
func (m *Manager) Lock(id string) (*Lock, error) {
	if !validID(id) {
		return nil, fmt.Errorf("lock session: invalid id %q", id)
	}
	if err := os.MkdirAll(m.sessionsDir(), dirMode); err != nil {
		return nil, fmt.Errorf("lock session %s: %w", id, err)
	}
	path := m.lockPath(id)
	for range maxLockAttempts {
		l, err := createLock(path)
		if err == nil {
			return l, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("lock session %s: %w", id, err)
		}
		st, rec, old, err := inspectLock(path)
		if err != nil {
			return nil, fmt.Errorf("lock session %s: %w", id, err)
		}
		switch st {
		case lockLive:
			return nil, &LockedError{ID: id, Pid: rec.Pid, Host: rec.Host, Since: rec.Time}
		case lockStale:
			// old is still flocked by us, so no other taker can judge the same
			// stale file and delete the fresh lock we are about to create.
			err := os.Remove(path)
			old.Close()
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("lock session %s: remove stale lock: %w", id, err)
			}
		}
	}
	return nil, fmt.Errorf("lock session %s: lock file keeps changing; another process is contending for it", id)
}

// createLock makes the lock file at path whole or not at all: the record is
// written, and flocked, in a temporary file that is then linked into place
// (a link fails when path exists, as O_EXCL would). A process killed at any
// point leaves no lock, or a complete one whose flock died with it — never
// an empty file that looks like a holder still writing its record (which
// would keep the session locked for staleUnparsedAge after a kill -9).
// fs.ErrExist when the lock is there already.
func createLock(path string) (*Lock, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*"+tempSuffix)
	if err != nil {
		return nil, err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // the lock, once linked, is path
	fail := func(err error) (*Lock, error) {
		f.Close()
		return nil, err
	}
	err = f.Chmod(fileMode)
	if err == nil {
		err = writeLockRecord(f)
	}
	if err != nil {
		return fail(err)
	}
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fail(err)
		}
		// A file system without hard links: create the file in place,
		// exclusively, then flock and write it (a kill in between leaves
		// it empty, taken for a live holder for staleUnparsedAge).
		f.Close()
		return createLockInPlace(path)
	}
	return &Lock{path: path, f: f}, nil
}

func createLockInPlace(path string) (*Lock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, fileMode)
	if err != nil {
		return nil, err
	}
	if err := writeLockRecord(f); err != nil {
		os.Remove(path)
		f.Close()
		return nil, err
	}
	return &Lock{path: path, f: f}, nil
}

// writeLockRecord flocks f, then writes this process's record in it:
// flocked first, so that whoever sees the record also finds the flock. Not
// synced: a record only matters while its holder lives, and a power loss
// ends every holder (a record it leaves whole names a dead process, one it
// leaves empty is stale after staleUnparsedAge).
func writeLockRecord(f *os.File) error {
	flocked := flockWait(f) == nil
	rec := lockRecord{Pid: os.Getpid(), Host: hostname(), Time: time.Now().UTC(), Flock: flocked}
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	_, err = f.Write(append(data, '\n'))
	return err
}

type lockState int

const (
	lockGone    lockState = iota // no lock file
	lockChanged                  // replaced while being inspected; look again
	lockLive
	lockStale
)

// inspectLock judges the lock file at path. For lockStale it returns the file
// still open, and flocked where flock works, so the caller can remove it
// before anyone else can claim the same verdict.
func inspectLock(path string) (lockState, lockRecord, *os.File, error) {
	var rec lockRecord
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return lockGone, rec, nil, nil
	}
	if err != nil {
		return 0, rec, nil, err
	}
	fl := flockTry(f)
	data, rerr := io.ReadAll(io.LimitReader(f, 64<<10))
	parsed := rerr == nil && json.Unmarshal(data, &rec) == nil && rec.Pid > 0
	if fl == flockBusy {
		f.Close()
		return lockLive, rec, nil, nil
	}
	// A verdict on a file that has since been replaced says nothing about the
	// current lock.
	info, serr := f.Stat()
	cur, cerr := os.Stat(path)
	if serr != nil || cerr != nil || !os.SameFile(info, cur) {
		f.Close()
		if cerr != nil && !errors.Is(cerr, fs.ErrNotExist) {
			return 0, rec, nil, cerr
		}
		return lockChanged, rec, nil, nil
	}
	var stale bool
	switch {
	case !parsed:
		stale = time.Since(info.ModTime()) > staleUnparsedAge
	case rec.Host != hostname():
		stale = false
	default:
		stale = !processAlive(rec.Pid) || (rec.Flock && fl == flockAcquired)
	}
	if !stale {
		f.Close()
		return lockLive, rec, nil, nil
	}
	return lockStale, rec, f, nil
}

// Release gives the lock up. It removes the lock file only if it is still the
// one this Lock created, so a lock that was (wrongly) taken over by another
// process is left to its new owner. Releasing twice is a no-op.
func (l *Lock) Release() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	f := l.f
	l.f = nil
	var err error
	mine, serr := f.Stat()
	cur, cerr := os.Stat(l.path)
	switch {
	case cerr != nil:
		if !errors.Is(cerr, fs.ErrNotExist) {
			err = cerr
		}
	case serr != nil:
		err = serr
	case os.SameFile(mine, cur):
		// Remove while the flock is still held, then close to drop it.
		if rerr := os.Remove(l.path); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			err = rerr
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Running reports whether session id is locked by a live process, this one
// included.
func (m *Manager) Running(id string) bool {
	if !validID(id) {
		return false
	}
	for range maxLockAttempts {
		st, _, f, err := inspectLock(m.lockPath(id))
		if f != nil {
			f.Close()
		}
		if err != nil {
			return false
		}
		switch st {
		case lockLive:
			return true
		case lockGone, lockStale:
			return false
		}
	}
	// The lock file keeps being replaced: somebody is actively taking it.
	return true
}

// removeOrphanLocks deletes the locks of sessions that do not exist, left by
// a process killed between taking a new session's lock and saving it. A lock
// whose holder is alive, or on another host, is left alone.
func (m *Manager) removeOrphanLocks() error {
	files, err := m.sessionsDirFiles()
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range files {
		id, ok := strings.CutSuffix(e.Name(), lockExt)
		if !ok || !validID(id) {
			continue
		}
		if _, err := os.Lstat(m.SessionPath(id)); !errors.Is(err, fs.ErrNotExist) {
			continue // a session's own lock: the next Lock takes it over if stale
		}
		info, err := e.Info()
		if err != nil || time.Since(info.ModTime()) < orphanLockAge {
			continue
		}
		// Taking the lock rather than deleting the file judges the holder
		// exactly as a resume would, races included; releasing it removes it.
		l, err := m.Lock(id)
		if err != nil {
			var le *LockedError
			if !errors.As(err, &le) {
				errs = append(errs, err)
			}
			continue
		}
		if err := l.Release(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
