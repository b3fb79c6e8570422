package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/vibeteam/vibeteam/core/workflow"
)

const (
	dirMode  = 0o700
	fileMode = 0o600

	sessionExt = ".json"
	lockExt    = ".lock"
	// tempSuffix marks Save's temporary files. They start with a dot so List
	// never mistakes one for a session.
	tempSuffix = ".tmp"
	// staleTempAge is how old a temporary file must be before Prune treats it
	// as debris from a killed process rather than a save in progress.
	staleTempAge = time.Hour
)

// Manager stores sessions under <baseDir>/.vibeteam/.
type Manager struct {
	root string
}

// NewManager returns a Manager for the .vibeteam directory of baseDir. It
// touches nothing on disk; directories are created on first write.
func NewManager(baseDir string) *Manager {
	return &Manager{root: filepath.Join(baseDir, ".vibeteam")}
}

// Root is <baseDir>/.vibeteam.
func (m *Manager) Root() string { return m.root }

func (m *Manager) sessionsDir() string { return filepath.Join(m.root, "sessions") }
func (m *Manager) logsDir() string     { return filepath.Join(m.root, "logs") }

// SessionPath is <root>/sessions/<id>.json.
func (m *Manager) SessionPath(id string) string {
	return filepath.Join(m.sessionsDir(), id+sessionExt)
}

// LogDir is <root>/logs/<id>, which holds one output log per task.
func (m *Manager) LogDir(id string) string { return filepath.Join(m.logsDir(), id) }

// TaskLogPath is <root>/logs/<id>/<taskID>.log, with taskID reduced to a safe
// single file name.
func (m *Manager) TaskLogPath(id, taskID string) string {
	return filepath.Join(m.LogDir(id), safeFileName(taskID)+".log")
}

// EventLogPath is <root>/logs/<id>.jsonl.
func (m *Manager) EventLogPath(id string) string {
	return filepath.Join(m.logsDir(), id+".jsonl")
}

func (m *Manager) lockPath(id string) string {
	return filepath.Join(m.sessionsDir(), id+lockExt)
}

// saveLocks serialises saves per session file across every Manager in the
// process, so two Managers for the same directory cannot interleave either.
var saveLocks sync.Map // absolute path -> *sync.Mutex

func saveLock(path string) *sync.Mutex {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	mu, _ := saveLocks.LoadOrStore(path, new(sync.Mutex))
	return mu.(*sync.Mutex)
}

// Save checkpoints s to SessionPath(s.ID) and sets s.UpdatedAt.
//
// The file is replaced atomically, so a reader (or a resume after the process
// was killed mid-save) sees either the previous or the new checkpoint, never a
// mix. Concurrent saves of the same session are serialised; s itself is read
// under that serialisation, so goroutines that share one *Session and only
// mutate it while saving do not race.
func (m *Manager) Save(s *Session) error {
	if s == nil {
		return errors.New("save session: nil session")
	}
	if !validID(s.ID) {
		return fmt.Errorf("save session: invalid id %q", s.ID)
	}
	path := m.SessionPath(s.ID)
	mu := saveLock(path)
	mu.Lock()
	defer mu.Unlock()

	s.UpdatedAt = time.Now()
	if s.Version < FormatVersion {
		s.Version = FormatVersion // read as this format (readSession upgrades)
	}
	// The totals are derived, kept in the file for whoever reads it.
	s.Agents = nil
	if t := s.AgentTotals(); t.Runs > 0 {
		s.Agents = &t
	}
	data, err := marshalSession(s)
	if err != nil {
		return fmt.Errorf("save session %s: %w", s.ID, err)
	}
	data = append(RedactJSON(data), '\n')
	if err := writeFileAtomic(path, data); err != nil {
		return fmt.Errorf("save session %s: %w", s.ID, err)
	}
	return nil
}

// marshalSession is json.Marshal(s), with the workflow definition's part
// encoded once per definition: a session is saved at its start and its end
// (and every few thousand changes), and its definition, which does not
// change while it runs, was most of the work of each save. Compact, not
// indented: indenting a stage workflow's session took as long again as
// encoding it (vibeteam show is the session for people; jq reads either).
func marshalSession(s *Session) ([]byte, error) {
	def := s.WorkflowDefinition
	if def == nil {
		return json.Marshal(s)
	}
	h := *s
	h.WorkflowDefinition = nil
	data, err := json.Marshal(&h)
	if err != nil {
		return nil, err
	}
	encoded, err := definitionJSON(def)
	if err != nil {
		return nil, err
	}
	// Inside a JSON string every quote is escaped: a quote after a comma
	// is the field's.
	const field = `,"workflowDefinition":`
	at := bytes.Index(data, []byte(field+"null"))
	if at < 0 {
		return json.Marshal(s)
	}
	at += len(field)
	out := make([]byte, 0, len(data)+len(encoded))
	out = append(out, data[:at]...)
	out = append(out, encoded...)
	return append(out, data[at+len("null"):]...), nil
}

// lastDefinition is the last definition encoded, and its encoding as a
// field of a session.
var lastDefinition struct {
	sync.Mutex
	def  *workflow.Definition
	data []byte
}

func definitionJSON(def *workflow.Definition) ([]byte, error) {
	lastDefinition.Lock()
	defer lastDefinition.Unlock()
	if lastDefinition.def == def {
		return lastDefinition.data, nil
	}
	data, err := json.Marshal(def)
	if err != nil {
		return nil, err
	}
	lastDefinition.def, lastDefinition.data = def, data
	return data, nil
}

// writeFileAtomic replaces path with data so that, whatever happens, path
// holds either its old or its new complete content.
func writeFileAtomic(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, dirMode); err != nil {
		return err
	}
	// Same directory: rename is only atomic within one file system.
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*"+tempSuffix)
	if err != nil {
		return err
	}
	tmpName := tmp.Name()
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmpName)
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		return err
	}
	// Without the fsync a crash after the rename can leave a zero-length file:
	// the rename may reach the disk before the data does.
	if err = tmp.Sync(); err != nil {
		return err
	}
	// The checkpoint holds prompts and goals; keep it private even if the
	// umask or the temp-file implementation would allow more.
	if err = tmp.Chmod(fileMode); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmpName, path); err != nil {
		return err
	}
	// Persist the rename itself; otherwise a power loss can bring back the
	// old directory entry.
	return syncDir(dir)
}

// Exists reports whether a session file id is on disk.
func (m *Manager) Exists(id string) bool {
	if !validID(id) {
		return false
	}
	_, err := os.Lstat(m.SessionPath(id))
	return err == nil
}

// Load reads the session id. An unknown id yields a *NotFoundError.
func (m *Manager) Load(id string) (*Session, error) {
	if !validID(id) {
		return nil, m.notFound(id)
	}
	s, err := readSession(m.SessionPath(id))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, m.notFound(id)
	}
	if err != nil {
		return nil, err
	}
	if s.ID == "" {
		s.ID = id
	}
	return s, nil
}

func readSession(path string) (*Session, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s Session
	if why := unreadable(data, json.Unmarshal(data, &s)); why != "" {
		return nil, &DamagedError{ID: strings.TrimSuffix(filepath.Base(path), sessionExt), Path: path, Reason: why}
	}
	if err := applyJournal(&s, strings.TrimSuffix(path, ".json")+".journal"); err != nil {
		return nil, fmt.Errorf("read session %s: %w", path, err)
	}
	s.upgradeStageRuns()
	s.upgradeTaskRecords()
	return &s, nil
}

// Check rejects a session that parses but cannot be shown or resumed (a
// file edited by hand, or written by another version).
func (s *Session) Check() error {
	switch {
	case s.Version > FormatVersion:
		return fmt.Errorf("written in session format v%d by a newer vibeteam; this one reads up to v%d", s.Version, FormatVersion)
	case s.Version < 0:
		return fmt.Errorf("bad format version %d", s.Version)
	}
	if s.Backlog != nil {
		return nil
	}
	if s.WorkflowDefinition == nil {
		return errors.New("no workflowDefinition")
	}
	if n := len(s.WorkflowDefinition.Stages()); s.CurrentStageIndex < 0 || s.CurrentStageIndex > n {
		return fmt.Errorf("currentStageIndex %d is outside 0..%d", s.CurrentStageIndex, n)
	}
	return nil
}

func (m *Manager) notFound(id string) error {
	ids, _ := m.IDs() // suggestions are best effort
	return &NotFoundError{ID: id, Nearest: nearestIDs(id, ids, maxNearest)}
}

// IDs returns the ids of all session files, sorted, without reading them.
func (m *Manager) IDs() ([]string, error) {
	files, err := m.sessionsDirFiles()
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, e := range files {
		if id, ok := strings.CutSuffix(e.Name(), sessionExt); ok && validID(id) {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids, nil
}

// sessionsDirFiles are the regular files of the sessions folder (session
// files, locks, journals, temporary files): none when it does not exist.
func (m *Manager) sessionsDirFiles() ([]fs.DirEntry, error) {
	entries, err := os.ReadDir(m.sessionsDir())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(entries, func(e fs.DirEntry) bool { return !e.Type().IsRegular() }), nil
}

// List returns every readable session, most recently updated first. A corrupt
// or unreadable file is skipped: one bad checkpoint must not hide the others.
func (m *Manager) List() ([]*Session, error) {
	sessions, _, err := m.Scan()
	return sessions, err
}

// Scan returns every readable session, most recently updated first, and
// every session file that cannot be read (empty, cut short, null, not
// JSON, unreadable), by id. A JSON object that is not a session of
// vibeteam's is neither.
func (m *Manager) Scan() ([]*Session, []*DamagedError, error) {
	ids, err := m.IDs()
	if err != nil {
		return nil, nil, err
	}
	sessions := make([]*Session, 0, len(ids))
	var damaged []*DamagedError
	for _, id := range ids {
		s, err := readSession(m.SessionPath(id))
		if err != nil {
			var d *DamagedError
			if !errors.As(err, &d) {
				d = &DamagedError{ID: id, Path: m.SessionPath(id), Reason: err.Error()}
			}
			damaged = append(damaged, d)
			continue
		}
		if !looksLikeSession(s, id) {
			continue
		}
		if s.ID == "" {
			s.ID = id
		}
		sessions = append(sessions, s)
	}
	sort.SliceStable(sessions, func(i, j int) bool {
		a, b := sessions[i], sessions[j]
		if !a.UpdatedAt.Equal(b.UpdatedAt) {
			return a.UpdatedAt.After(b.UpdatedAt)
		}
		return a.ID < b.ID
	})
	return sessions, damaged, nil
}

// looksLikeSession tells a session vibeteam wrote from any other JSON file
// that happens to sit in the sessions folder (and that listing, and above
// all pruning, must leave alone): the id of its file name, and a format
// version vibeteam writes (Save always does), or, for the first format
// (no version field), the workflow definition every such file holds.
func looksLikeSession(s *Session, id string) bool {
	if s.ID != id && !(s.ID == "" && s.Version == 0) {
		return false
	}
	if s.Version == 0 {
		return s.WorkflowDefinition != nil
	}
	return s.Version >= 1 && s.Version <= FormatVersion
}

// pruneTier ranks how readily a session may be deleted: lower goes first.
// Finished-for-good sessions go before ones a user may still want to resume.
func pruneTier(s *Session) int {
	switch s.Status {
	case StatusCompleted, StatusFailed, StatusCancelled:
		return 0
	default: // waiting, blocked, pending_merge, or "running" left by a crash
		return 1
	}
}

// Prune deletes sessions until at most keep remain, together with their logs.
// It also removes debris of killed processes: old temporary files, and locks
// of sessions that were never saved.
// Completed, failed and cancelled sessions go first, oldest first; then the
// resumable ones. A session in use by a live process is never deleted, so
// fewer sessions than requested may be removed. Corrupt session files are not
// counted and are left alone for a human to inspect.
func (m *Manager) Prune(keep int) error {
	if keep < 0 {
		return fmt.Errorf("prune: keep must be >= 0, got %d", keep)
	}
	if err := m.CheckPlace(); err != nil {
		return fmt.Errorf("prune: %w", err)
	}
	var errs []error
	if err := m.removeStaleTemps(); err != nil {
		errs = append(errs, err)
	}
	if err := m.removeOrphanLocks(); err != nil {
		errs = append(errs, err)
	}
	// Every run prunes as it starts: reading each session only to learn
	// that there are no more files than it keeps made the start grow with
	// the sessions kept.
	if ids, err := m.IDs(); err == nil && len(ids) <= keep {
		return errors.Join(errs...)
	}
	sessions, err := m.List()
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("prune: %w", err))...)
	}
	excess := len(sessions) - keep
	if excess <= 0 {
		return errors.Join(errs...)
	}
	cands := append([]*Session(nil), sessions...)
	sort.SliceStable(cands, func(i, j int) bool {
		a, b := cands[i], cands[j]
		if ta, tb := pruneTier(a), pruneTier(b); ta != tb {
			return ta < tb
		}
		if !a.UpdatedAt.Equal(b.UpdatedAt) {
			return a.UpdatedAt.Before(b.UpdatedAt)
		}
		return a.ID < b.ID
	})
	for _, s := range cands {
		if excess == 0 {
			break
		}
		// Taking the lock, rather than just checking Running, closes the race
		// with a process that resumes the session while we delete it.
		l, err := m.Lock(s.ID)
		if err != nil {
			var le *LockedError
			if !errors.As(err, &le) {
				errs = append(errs, err)
			}
			continue
		}
		if err := m.removeSession(s.ID); err != nil {
			errs = append(errs, err)
		} else {
			excess--
		}
		if err := l.Release(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Discard deletes a session that never started (its worktree could not be
// made): its checkpoint, journal and logs.
func (m *Manager) Discard(id string) error {
	if !validID(id) {
		return m.notFound(id)
	}
	return m.removeSession(id)
}

// removeSession deletes the checkpoint first: once it is gone the session no
// longer exists, and leftover logs are harmless.
func (m *Manager) removeSession(id string) error {
	if err := os.Remove(m.SessionPath(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("prune %s: %w", id, err)
	}
	var errs []error
	forgetLogDir(m.LogDir(id))
	if err := os.RemoveAll(m.LogDir(id)); err != nil {
		errs = append(errs, fmt.Errorf("prune %s: %w", id, err))
	}
	if err := os.Remove(m.EventLogPath(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, fmt.Errorf("prune %s: %w", id, err))
	}
	if err := os.Remove(m.journalPath(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, fmt.Errorf("prune %s: %w", id, err))
	}
	return errors.Join(errs...)
}

// removeStaleTemps deletes temporary files left behind by saves that were
// killed before their rename.
func (m *Manager) removeStaleTemps() error {
	files, err := m.sessionsDirFiles()
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range files {
		name := e.Name()
		if !strings.HasPrefix(name, ".") || !strings.HasSuffix(name, tempSuffix) {
			continue
		}
		info, err := e.Info()
		if err != nil || time.Since(info.ModTime()) < staleTempAge {
			continue
		}
		if err := os.Remove(filepath.Join(m.sessionsDir(), name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
