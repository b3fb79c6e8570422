package state

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"
	"time"
)

// A session is checkpointed as a snapshot (<id>.json, rewritten whole) plus
// a journal (<id>.journal, one JSON line per change, appended). Rewriting
// the snapshot on every change costs the size of the session each time,
// which grows with the work; an append costs the size of the change.
// Readers apply the journal over the snapshot; compaction folds it in.

// Change is one journal line. Seq orders the lines; a snapshot records the
// last Seq it contains, so replaying a journal that a crash left behind
// after its snapshot was written applies nothing twice.
type Change struct {
	Seq     uint64        `json:"seq"`
	Time    time.Time     `json:"time"`
	Task    string        `json:"task,omitempty"`
	Status  TaskStatus    `json:"status,omitempty"`  // the task's status
	Record  *TaskRecord   `json:"record,omitempty"`  // the task's whole record
	History *HistoryEntry `json:"history,omitempty"` // appended to the history
	Stage   *int          `json:"stage,omitempty"`   // currentStageIndex
	Cursor  *string       `json:"cursor,omitempty"`  // the next step's address
	Run     *StepRun      `json:"run,omitempty"`     // the step run at RunKey
	RunKey  string        `json:"runKey,omitempty"`
}

// compactAfter is how many journal lines a session gathers before they are
// folded into the snapshot; it keeps reads fast at a cost that stays
// proportional to the work.
const compactAfter = 4096

func (m *Manager) journalPath(id string) string {
	return strings.TrimSuffix(m.SessionPath(id), ".json") + ".journal"
}

// Journal appends a running session's changes.
type Journal struct {
	m    *Manager
	id   string
	mu   sync.Mutex
	f    *os.File
	w    *bufio.Writer
	seq  uint64
	size int // lines since the last compaction

	// syncs asks the syncer for an fsync; one request waiting is enough,
	// since one fsync covers every write before it.
	syncs   chan struct{}
	closing chan struct{}
	synced  sync.WaitGroup
}

// syncGap is the least time between two fsyncs of a journal: steps that end
// closer together share one, so a run of short steps is not paced by the
// disk. A kill loses nothing either way (every change is written when it
// happens); a power loss may lose the ends of that last moment.
const syncGap = 20 * time.Millisecond

// OpenJournal starts journaling s, whose snapshot must have been saved:
// changes continue after the last one it holds.
func (m *Manager) OpenJournal(s *Session) (*Journal, error) {
	f, err := os.OpenFile(m.journalPath(s.ID), os.O_CREATE|os.O_WRONLY|os.O_APPEND, fileMode)
	if err != nil {
		return nil, fmt.Errorf("open journal of %s: %w", s.ID, err)
	}
	j := &Journal{m: m, id: s.ID, f: f, w: bufio.NewWriterSize(f, 16<<10), seq: s.JournalSeq, syncs: make(chan struct{}, 1), closing: make(chan struct{})}
	j.synced.Add(1)
	go j.syncer(f)
	return j, nil
}

// syncer fsyncs the journal when asked, off the path of the steps: a write
// that returned already survives the process being killed; the fsync adds
// surviving a power loss, one fsync's time later. Several ends that come
// during one fsync share the next.
func (j *Journal) syncer(f *os.File) {
	defer j.synced.Done()
	gap := time.NewTimer(syncGap)
	defer gap.Stop()
	for range j.syncs {
		_ = f.Sync()
		gap.Reset(syncGap)
		select {
		case <-gap.C:
		case <-j.closing: // Close syncs last, itself
		}
	}
}

// Append writes c: once it returns, c survives the process being killed,
// which is what resume needs. durable (the end of a task or a step) also
// has it fsynced, by the syncer, so that it survives a power loss too a
// moment later, without making every step wait for the disk.
func (j *Journal) Append(c Change, durable bool) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return errors.New("journal closed")
	}
	j.seq++
	c.Seq, c.Time = j.seq, time.Now()
	line, err := json.Marshal(c)
	if err != nil {
		return err
	}
	line = append(line, '\n')
	if _, err := j.w.Write(line); err != nil {
		return err
	}
	// Flushed at once: a reader (show, sessions) or a crash must see it.
	if err := j.w.Flush(); err != nil {
		return err
	}
	j.size++
	if durable {
		select {
		case j.syncs <- struct{}{}:
		default: // one is waiting already; it covers this write too
		}
	}
	return nil
}

// Due reports whether enough has been journaled to compact.
func (j *Journal) Due() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.size >= compactAfter
}

// Compact writes s (which holds every change journaled so far) as the
// snapshot and empties the journal.
func (j *Journal) Compact(s *Session) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	s.JournalSeq = j.seq
	if err := j.m.Save(s); err != nil {
		return err
	}
	j.size = 0
	if j.f == nil {
		return nil
	}
	// A crash before this truncation leaves lines the snapshot already
	// holds; their Seq makes the reader skip them.
	return j.f.Truncate(0)
}

// Close closes the journal file.
func (j *Journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return nil
	}
	close(j.closing)
	close(j.syncs)
	j.synced.Wait()
	err := errors.Join(j.w.Flush(), j.f.Sync(), j.f.Close())
	j.f = nil
	return err
}

// applyJournal applies the journal at path over s. A last line cut short
// (a crash in the middle of a write) is ignored.
func applyJournal(s *Session, path string) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for len(data) > 0 {
		nl := bytes.IndexByte(data, '\n')
		if nl < 0 {
			break // cut short
		}
		line := data[:nl]
		data = data[nl+1:]
		var c Change
		if err := json.Unmarshal(line, &c); err != nil {
			return fmt.Errorf("journal %s: %w", path, err)
		}
		if c.Seq <= s.JournalSeq {
			continue
		}
		s.apply(c)
	}
	return nil
}

func (s *Session) apply(c Change) {
	s.JournalSeq = c.Seq
	if c.Task != "" {
		if s.TaskStatus == nil {
			s.TaskStatus = map[string]TaskStatus{}
		}
		if s.Tasks == nil {
			s.Tasks = map[string]*TaskRecord{}
		}
		if c.Status != "" {
			s.TaskStatus[c.Task] = c.Status
		}
		if c.Record != nil {
			s.Tasks[c.Task] = c.Record
		}
	}
	if c.History != nil {
		s.History = append(s.History, *c.History)
	}
	if c.Stage != nil {
		s.CurrentStageIndex = *c.Stage
	}
	if c.Cursor != nil {
		s.Cursor = *c.Cursor
	}
	if c.Run != nil {
		if s.Runs == nil {
			s.Runs = map[string]*StepRun{}
		}
		s.Runs[c.RunKey] = c.Run
	}
	s.UpdatedAt = c.Time
}
