package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"reflect"
	"slices"
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
	// Stage is the currentStageIndex a stage workflow moved to, in the
	// journals of vibeteams before stage workflows had step runs: read,
	// no longer written (the header carries the index, a Run the place).
	Stage  *int     `json:"stage,omitempty"`
	Cursor *string  `json:"cursor,omitempty"` // the next step's address
	Run    *StepRun `json:"run,omitempty"`    // the step run at RunKey
	RunKey string   `json:"runKey,omitempty"`
	// Session is the session's header (every field but the collections
	// above and the definition) when it changed since the last line: the
	// bead, worktree, branch, base, merge intent and result, status,
	// variables, blocked context... Journaled whole whenever it differs,
	// so a field added to Session is journaled without anyone naming it.
	Session json.RawMessage `json:"session,omitempty"`
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
	seq  uint64
	size int // lines since the last compaction
	// header is the session header as last journaled (or compacted): a
	// change carries the header only when it differs.
	header []byte
	// line and head are reused for each line and each header a change is
	// compared with, head's session too: a run of short steps journals two
	// or more changes a step, and need not make garbage for each.
	line, head bytes.Buffer
	lineEnc    *json.Encoder
	headEnc    *json.Encoder
	headOf     Session
	// lastHead is the header last encoded, when its maps, slices and
	// pointers were all nil or empty (lastHeadOK): a header whose are too,
	// and whose other fields equal it, encodes the same.
	lastHead   Session
	lastHeadOK bool
	// good is the journal's length after its last whole line: a write cut
	// short (a full disk) is cut off there, so no torn line is ever
	// followed by good ones.
	good int64

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
	end, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open journal of %s: %w", s.ID, err)
	}
	j := &Journal{m: m, id: s.ID, f: f, seq: s.JournalSeq, good: end, syncs: make(chan struct{}, 1), closing: make(chan struct{})}
	j.lineEnc, j.headEnc = json.NewEncoder(&j.line), json.NewEncoder(&j.head)
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

// Record journals c together with s's header when that changed since the
// last line: every change of the session's own fields reaches the journal
// with the next change recorded, and no caller has to name them.
func (j *Journal) Record(s *Session, c Change, durable bool) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	// As Header, into buffers of the journal's own.
	j.headOf = *s
	j.headOf.stripHeader()
	if j.lastHeadOK && sameHeader(&j.lastHead, &j.headOf) {
		// Encoded, it would be the last header again: most changes leave
		// it as it was, and its encoding cost as much as the change's.
		j.headOf = Session{}
		return j.appendLocked(c, durable)
	}
	j.head.Reset()
	if err := j.headEnc.Encode(&j.headOf); err != nil {
		return err
	}
	j.lastHeadOK, j.lastHead = false, Session{}
	plain := plainHeader(&j.headOf)
	if plain {
		j.lastHead = j.headOf
	}
	j.headOf = Session{} // holds nothing of s until the next change
	h := bytes.TrimSuffix(j.head.Bytes(), []byte("\n"))
	changed := !bytes.Equal(h, j.header)
	if changed {
		c.Session = h
	}
	if err := j.appendLocked(c, durable); err != nil {
		return err
	}
	if changed {
		j.header = append(j.header[:0], h...)
	}
	j.lastHeadOK = plain // the header on disk is lastHead's
	return nil
}

// headerFields are Session's fields sorted, once, by how a header tells
// whether one changed without encoding it: plain ones (numbers, strings,
// times) by ==; held ones (maps, slices, pointers) only while nil or
// empty, when their JSON is fixed by whether they are nil. A field of
// another kind (none today) turns the shortcut off: every header is
// encoded. Sorted by kind, not named: a field added to Session is
// compared without anyone listing it.
var headerFields = sync.OnceValue(func() (f struct {
	plain, held []int
	off         bool
}) {
	t := reflect.TypeFor[Session]()
	for i := range t.NumField() {
		ft := t.Field(i).Type
		switch ft.Kind() {
		case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
			reflect.Float32, reflect.Float64, reflect.String:
			f.plain = append(f.plain, i)
		case reflect.Map, reflect.Slice, reflect.Pointer, reflect.Interface:
			f.held = append(f.held, i)
		default:
			if ft == reflect.TypeFor[time.Time]() {
				f.plain = append(f.plain, i)
			} else {
				f.off = true
			}
		}
	}
	return f
})

// plainHeader reports whether h's held fields are all nil or empty.
func plainHeader(h *Session) bool {
	f := headerFields()
	if f.off {
		return false
	}
	v := reflect.ValueOf(h).Elem()
	for _, i := range f.held {
		fv := v.Field(i)
		if k := fv.Kind(); (k == reflect.Map || k == reflect.Slice) && fv.Len() > 0 || (k == reflect.Pointer || k == reflect.Interface) && !fv.IsNil() {
			return false
		}
	}
	return true
}

// sameHeader reports whether h encodes as last does, last being plain
// (plainHeader): h is plain too, nil where last is, and its other fields
// equal last's.
func sameHeader(last, h *Session) bool {
	if !plainHeader(h) {
		return false
	}
	f := headerFields()
	lv, hv := reflect.ValueOf(last).Elem(), reflect.ValueOf(h).Elem()
	for _, i := range f.held {
		if lv.Field(i).IsNil() != hv.Field(i).IsNil() {
			return false
		}
	}
	for _, i := range f.plain {
		if !lv.Field(i).Equal(hv.Field(i)) {
			return false
		}
	}
	return true
}

// Append writes c: once it returns, c survives the process being killed,
// which is what resume needs. durable (the end of a task or a step) also
// has it fsynced, by the syncer, so that it survives a power loss too a
// moment later, without making every step wait for the disk.
func (j *Journal) Append(c Change, durable bool) error {
	if len(c.Session) > 0 {
		// A line of its own: the header as compact JSON.
		var b bytes.Buffer
		if err := json.Compact(&b, c.Session); err != nil {
			return fmt.Errorf("journal of %s: session header: %w", j.id, err)
		}
		c.Session = b.Bytes()
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.lastHeadOK, j.lastHead = false, Session{}
	return j.appendLocked(c, durable)
}

func (j *Journal) appendLocked(c Change, durable bool) error {
	if j.f == nil {
		return errors.New("journal closed")
	}
	j.seq++
	c.Seq, c.Time = j.seq, time.Now()
	j.line.Reset()
	// The header, already JSON, is put in as it is: as a RawMessage field
	// the encoder would parse and compact it again, on every line.
	header := c.Session
	c.Session = nil
	if err := j.lineEnc.Encode(c); err != nil { // as json.Marshal, and a newline
		j.seq--
		return err
	}
	if len(header) > 0 {
		// Session is Change's last field: the line ends with it.
		j.line.Truncate(j.line.Len() - len("}\n"))
		j.line.WriteString(`,"session":`)
		j.line.Write(header)
		j.line.WriteString("}\n")
	}
	// In one write, at once: a reader (show, sessions) or a crash must see
	// it.
	line := RedactJSON(j.line.Bytes())
	if _, err := j.f.Write(line); err != nil {
		// Whatever part of the line reached the file goes: the next line
		// starts where the last whole one ended.
		j.seq--
		_ = j.f.Truncate(j.good)
		return fmt.Errorf("journal of %s: %w", j.id, err)
	}
	j.good += int64(len(line))
	j.size++
	if durable {
		select {
		case j.syncs <- struct{}{}:
		default: // one is waiting already; it covers this write too
		}
	}
	return nil
}

// Empty reports whether the journal holds no line.
func (j *Journal) Empty() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.good == 0
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
	j.lastHeadOK, j.lastHead = false, Session{}
	if h, err := s.Header(); err == nil {
		j.header = append(j.header[:0], h...)
	}
	if j.f == nil {
		return nil
	}
	// A crash before this truncation leaves lines the snapshot already
	// holds; their Seq makes the reader skip them.
	if err := j.f.Truncate(0); err != nil {
		return err
	}
	j.good = 0
	return nil
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
	var err error
	if j.good > 0 {
		// An empty journal (compacted: the snapshot, synced, holds it
		// all) has nothing to sync.
		err = j.f.Sync()
	}
	err = errors.Join(err, j.f.Close())
	j.f = nil
	return err
}

// applyJournal applies the journal at path over s. A last line cut short
// (a kill or a full disk in the middle of a write) is ignored, and so is a
// last line that does not parse: both are what a crash leaves, noted in
// s.Damage for the reader to report; resume goes on from what is whole. A
// line that cannot be read with lines after it is damage a crash does not
// make (a bad sector, a bad sync): the replay stops there, never applying
// the lines after a gap as if none were missing, and s.Broken says where
// and what was not applied.
func applyJournal(s *Session, path string) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for n := 1; len(data) > 0; n++ {
		nl := bytes.IndexByte(data, '\n')
		if nl < 0 {
			s.Damage = append(s.Damage, fmt.Sprintf("%s:%d: the last line was cut short (%d bytes, a write interrupted by a kill or a full disk); ignored", path, n, len(data)))
			break
		}
		line := data[:nl]
		data = data[nl+1:]
		var c Change
		err := json.Unmarshal(line, &c)
		if err == nil && c.Seq <= s.JournalSeq {
			continue
		}
		if err == nil {
			err = s.apply(c) // applies nothing when it fails
		}
		if err == nil {
			continue
		}
		if len(bytes.TrimSpace(data)) == 0 {
			s.Damage = append(s.Damage, fmt.Sprintf("%s:%d: not a whole change (%v); ignored", path, n, err))
			break
		}
		s.Broken = &JournalDamage{Path: path, Line: n, Why: err.Error()}
		var lost []string
		s.Broken.Lost, lost, s.Broken.Steps = lostChanges(data, s.JournalSeq)
		s.Broken.Again = unended(s)
		for _, name := range lost {
			if !slices.Contains(s.Broken.Again, name) {
				s.Broken.Again = append(s.Broken.Again, name)
			}
		}
		break
	}
	return nil
}

func (s *Session) apply(c Change) error {
	if len(c.Session) > 0 {
		if err := s.setHeader(c.Session); err != nil {
			return err
		}
	}
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
		if c.Run.PrunedThrough > 0 {
			s.PruneIterations(c.RunKey, c.Run.PrunedThrough)
		}
	}
	s.UpdatedAt = c.Time
	return nil
}

// Header is the session without its collections (runs, tasks, history),
// its definition and what is derived: everything else, as JSON.
func (s *Session) Header() ([]byte, error) {
	h := *s
	h.stripHeader()
	return json.Marshal(&h)
}

// stripHeader leaves of a copy of a session its header.
func (s *Session) stripHeader() {
	s.Runs, s.Tasks, s.TaskStatus, s.History = nil, nil, nil, nil
	s.WorkflowDefinition, s.JournalSeq, s.Agents, s.Damage, s.Broken = nil, 0, nil, nil, nil
}

// setHeader replaces every header field of s by those of a journaled
// header, keeping the collections and the definition.
func (s *Session) setHeader(data []byte) error {
	var h Session
	if err := json.Unmarshal(data, &h); err != nil {
		return fmt.Errorf("session header: %w", err)
	}
	h.Runs, h.Tasks, h.TaskStatus, h.History = s.Runs, s.Tasks, s.TaskStatus, s.History
	h.WorkflowDefinition, h.JournalSeq, h.Agents, h.Damage, h.Broken = s.WorkflowDefinition, s.JournalSeq, s.Agents, s.Damage, s.Broken
	*s = h
	return nil
}
