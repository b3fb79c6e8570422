// Package state holds the session checkpoint (WorkflowSession), the
// SessionManager that saves, locks, lists and prunes sessions on disk, and
// the JSONL event log.
package state

import (
	"iter"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vibeteam/vibeteam/core/agentstream"
	"github.com/vibeteam/vibeteam/core/budget"
	"github.com/vibeteam/vibeteam/core/events"
	"github.com/vibeteam/vibeteam/core/sandbox"
	"github.com/vibeteam/vibeteam/core/vocab"

	"github.com/vibeteam/vibeteam/core/workflow"
)

// Status is a session's overall status: vocab's word, under the name the
// session's code has always used for it.
type Status = vocab.SessionStatus

const (
	StatusRunning      = vocab.SessionRunning
	StatusWaiting      = vocab.SessionWaiting
	StatusCompleted    = vocab.SessionCompleted
	StatusFailed       = vocab.SessionFailed
	StatusCancelled    = vocab.SessionCancelled
	StatusPendingMerge = vocab.SessionPendingMerge
	StatusBlocked      = vocab.SessionBlocked
)

// TaskStatus is one task's status (vocab's).
type TaskStatus = vocab.TaskStatus

const (
	TaskPending        = vocab.TaskPending
	TaskRunning        = vocab.TaskRunning
	TaskWaitingForUser = vocab.TaskWaitingForUser
	TaskDone           = vocab.TaskDone
	TaskError          = vocab.TaskError
)

// HistoryEntry records something that happened in the session, such as a
// prompt given to a task or text sent to it.
type HistoryEntry struct {
	Time   time.Time `json:"time"`
	Kind   string    `json:"kind"` // prompt | input | status | note
	TaskID string    `json:"taskId,omitempty"`
	Text   string    `json:"text"`
}

// TaskRecord is what the session remembers about one task's last run.
type TaskRecord struct {
	// Status is the task's status in a record a step run holds (an agent
	// step's); a stage's tasks keep theirs in the session's TaskStatus.
	// Session.Task and AllTasks give it whichever holds it.
	Status        TaskStatus   `json:"status,omitempty"`
	Adapter       string       `json:"adapter"`
	Mode          string       `json:"mode"`
	Argv          []string     `json:"argv,omitempty"`
	Pid           int          `json:"pid,omitempty"`
	PidStart      uint64       `json:"pidStart,omitempty"` // the pid's start time, to recognise it after a crash
	ExitCode      *int         `json:"exitCode,omitempty"`
	Reason        vocab.Reason `json:"reason,omitempty"`
	Error         string       `json:"error,omitempty"`
	StartedAt     *time.Time   `json:"startedAt,omitempty"`
	EndedAt       *time.Time   `json:"endedAt,omitempty"`
	OutputTail    []string     `json:"outputTail,omitempty"` // bounded tail of clean output lines
	LogPath       string       `json:"logPath,omitempty"`
	PendingInputs []string     `json:"pendingInputs,omitempty"` // inputs not yet sent
	Excerpt       string       `json:"excerpt,omitempty"`       // the screen when it last needed a person
	Attempts      int          `json:"attempts,omitempty"`
	// SandboxRefused says which write the sandbox refused the task's
	// process, and the sandbox: entry that would allow it ("" for none).
	SandboxRefused string `json:"sandboxRefused,omitempty"`
	// Agent is what a headless agent's structured output said about its
	// run: its own session id, result, error, tokens, cost, tool calls and
	// denials (nil for plain text output).
	Agent *agentstream.Summary `json:"agent,omitempty"`
	// Allowed are the tools a person allowed for the rest of the run
	// (resume --allow, or "allow all" at a denial).
	Allowed []string `json:"allowed,omitempty"`
	// Question is what the agent's final message asked the person, when
	// the task waits for an answer; Answer is the answer given with
	// resume --answer, which continues the agent's session.
	Question *agentstream.Question `json:"question,omitempty"`
	Answer   string                `json:"answer,omitempty"`
}

// Allow adds tools to those a person allowed the task, each once.
func (r *TaskRecord) Allow(tools ...string) {
	for _, tool := range tools {
		if !slices.Contains(r.Allowed, tool) {
			r.Allowed = append(r.Allowed, tool)
		}
	}
}

// TaskRef is one task of a session, wherever its record is kept: a
// stage's task under the session's Tasks and TaskStatus by its id, an
// agent step's task in its step run.
type TaskRef struct {
	ID     string
	Status TaskStatus
	Record *TaskRecord // nil while it has none
	// RunKey is the address of the step run that holds the record; "" for
	// a stage's task.
	RunKey string
}

// StepTaskID is the task id (and log name) of a step run: the step's name
// at its address, e.g. "impl@2.1-0" for address "2.1/0".
func StepTaskID(name, address string) string {
	return name + "@" + strings.ReplaceAll(address, "/", "-")
}

// heldBy is the step run that holds the record of the task id (an agent
// step's task, id StepTaskID), and its address; nil for any other task.
func (s *Session) heldBy(id string) (string, *StepRun) {
	at := strings.LastIndexByte(id, '@')
	if at < 0 || len(s.Runs) == 0 {
		return "", nil
	}
	// An address holds digits, '.' and '/' only: its '-' were '/'.
	key := strings.ReplaceAll(id[at+1:], "-", "/")
	r := s.Runs[key]
	if r == nil || r.Task == nil || r.Name != id[:at] {
		return "", nil
	}
	return key, r
}

// Task is the task id, found wherever its record is kept; false when the
// session knows no such task.
func (s *Session) Task(id string) (TaskRef, bool) {
	if st, ok := s.TaskStatus[id]; ok {
		return TaskRef{ID: id, Status: st, Record: s.Tasks[id]}, true
	}
	if rec, ok := s.Tasks[id]; ok {
		return TaskRef{ID: id, Record: rec}, true
	}
	if key, r := s.heldBy(id); r != nil {
		return TaskRef{ID: id, Status: r.Task.Status, Record: r.Task, RunKey: key}, true
	}
	return TaskRef{}, false
}

// AllTasks yields every task of the session once, in no order: a stage's
// tasks, then those step runs hold.
func (s *Session) AllTasks() iter.Seq[TaskRef] {
	return func(yield func(TaskRef) bool) {
		for id, st := range s.TaskStatus {
			if !yield(TaskRef{ID: id, Status: st, Record: s.Tasks[id]}) {
				return
			}
		}
		for id, rec := range s.Tasks {
			if _, ok := s.TaskStatus[id]; ok {
				continue
			}
			if !yield(TaskRef{ID: id, Record: rec}) {
				return
			}
		}
		for key, r := range s.Runs {
			if r == nil || r.Task == nil {
				continue
			}
			if !yield(TaskRef{ID: StepTaskID(r.Name, key), Status: r.Task.Status, Record: r.Task, RunKey: key}) {
				return
			}
		}
	}
}

// WaitingFor are the ids of the tasks that wait for a person for reason (a
// denied tool call, a question), sorted.
func (s *Session) WaitingFor(reason vocab.Reason) []string {
	var ids []string
	for t := range s.AllTasks() {
		if t.Record != nil && t.Record.Reason == reason && t.Status == TaskWaitingForUser {
			ids = append(ids, t.ID)
		}
	}
	slices.Sort(ids)
	return ids
}

// AgentTotals adds up what the session's agents reported.
type AgentTotals = events.AgentTotals

// AgentTotals is the sum over every task's last run.
func (s *Session) AgentTotals() AgentTotals {
	var t AgentTotals
	for task := range s.AllTasks() {
		rec := task.Record
		if rec == nil || rec.Agent == nil {
			continue
		}
		t.Runs++
		t.Tokens.Add(rec.Agent.Tokens)
		t.CostUSD += rec.Agent.CostUSD
		t.ToolCalls += rec.Agent.ToolCalls
	}
	return t
}

// FormatVersion is the session file format this vibeteam writes. Version 1
// files (no version field: stage workflows only) and version 2 ones (an
// agent step's task record under Tasks["name@address"] rather than in its
// step run) are read and upgraded; newer ones are refused, never
// half-understood.
const FormatVersion = 3

// StepRun is one run of a step at one address (a grimoire step inside a
// loop runs once per iteration, each at its own address). A finished run is
// what a resume replays instead of running the step again.
type StepRun struct {
	Name      string           `json:"name"`
	Type      vocab.StepType   `json:"type"`
	Status    vocab.StepStatus `json:"status"`
	Iteration int              `json:"iteration,omitempty"`
	// The result, as templates read it ({{.tests.output}}): the output is
	// bounded (StepOutputLimit, the end of it); the whole is in LogPath.
	Output       string         `json:"output,omitempty"`
	Outputs      map[string]any `json:"outputs,omitempty"`
	Summary      string         `json:"summary,omitempty"`
	ExitCode     int            `json:"exitCode"`
	ExitLoop     bool           `json:"exitLoop,omitempty"`
	ChangedFiles []string       `json:"changedFiles,omitempty"`
	Reason       string         `json:"reason,omitempty"`
	LogPath      string         `json:"logPath,omitempty"`
	DurationMS   int64          `json:"durationMs,omitempty"`
	StartedAt    *time.Time     `json:"startedAt,omitempty"`
	EndedAt      *time.Time     `json:"endedAt,omitempty"`
	Attempts     int            `json:"attempts,omitempty"`
	// PrunedThrough (a loop's run) is the last of its iterations whose
	// runs were dropped to keep the session bounded: iterations 1 to
	// PrunedThrough finished, and only their count is kept.
	PrunedThrough int `json:"prunedThrough,omitempty"`
	// Task (an agent step's run) is the record of the task the step runs,
	// its status included: journaled with the run, and kept, as the run's
	// attempts are, when the step runs again at this address.
	Task *TaskRecord `json:"task,omitempty"`
}

// KeptIterations is how many of a loop's latest iterations keep their
// step runs (and tasks) in the session; older ones are dropped, so a loop
// of any length keeps the session's size bounded.
const KeptIterations = 16

// PruneIterations drops the step runs and task records of iterations 1 to
// through of the loop whose run is at loopKey.
func (s *Session) PruneIterations(loopKey string, through int) {
	if through < 1 {
		return
	}
	for k := range s.Runs {
		if n, ok := iterationUnder(k, loopKey, "/"); ok && n <= through {
			delete(s.Runs, k) // an agent step's task record with it
		}
	}
	// The tasks of stage steps: ids "id@address", the address's "/"
	// written "-".
	taskKey := strings.ReplaceAll(loopKey, "/", "-")
	for id := range s.Tasks {
		at := strings.LastIndexByte(id, '@')
		if at < 0 {
			continue
		}
		if n, ok := iterationUnder(id[at+1:], taskKey, "-"); ok && n <= through {
			delete(s.Tasks, id)
			delete(s.TaskStatus, id)
		}
	}
}

// iterationUnder reads key as the address of a run inside an iteration
// of the loop at loopKey ("2.7/0" is in iteration 7 of loop "2"), sep
// being the address's frame separator.
func iterationUnder(key, loopKey, sep string) (int, bool) {
	rest, ok := strings.CutPrefix(key, loopKey+".")
	if !ok {
		return 0, false
	}
	digits, _, found := strings.Cut(rest, sep)
	if !found {
		return 0, false // the loop's own address in an outer iteration
	}
	n, err := strconv.Atoi(digits)
	return n, err == nil
}

// upgradeTaskRecords moves the task records of agent steps that a session
// of format 2 kept under Tasks["name@address"] (their statuses under
// TaskStatus) into the step runs at those addresses, where this vibeteam
// keeps them. Its journal, applied first, put them there too.
func (s *Session) upgradeTaskRecords() {
	if len(s.Runs) == 0 {
		return
	}
	move := func(id string) {
		at := strings.LastIndexByte(id, '@')
		if at < 0 {
			return
		}
		r := s.Runs[strings.ReplaceAll(id[at+1:], "-", "/")]
		if r == nil || r.Type != workflow.StepAgent || r.Name != id[:at] || r.Task != nil {
			return // a stage's task, or one a pruned iteration left
		}
		rec := s.Tasks[id]
		if rec == nil {
			rec = &TaskRecord{}
		}
		rec.Status = s.TaskStatus[id]
		r.Task = rec
		delete(s.Tasks, id)
		delete(s.TaskStatus, id)
	}
	for id := range s.Tasks {
		move(id)
	}
	for id := range s.TaskStatus {
		move(id)
	}
}

// upgradeStageRuns gives a stage workflow the step runs its place is kept
// in: a stage before CurrentStageIndex that has no run is done. That is
// every stage before it in a session written before stage workflows had
// runs (or moved on by an older vibeteam); the stage at it has no run, and
// runs on resume, its DONE tasks skipped.
func (s *Session) upgradeStageRuns() {
	def := s.WorkflowDefinition
	if def == nil || def.Kind == workflow.KindGrimoire || s.Backlog != nil {
		return
	}
	for i := 0; i < s.CurrentStageIndex && i < len(def.Steps); i++ {
		st := &def.Steps[i]
		key := strconv.Itoa(i)
		if st.Type != workflow.StepStage || s.Runs[key] != nil {
			continue
		}
		if s.Runs == nil {
			s.Runs = map[string]*StepRun{}
		}
		s.Runs[key] = &StepRun{Name: st.Label(), Type: st.Type, Status: vocab.StepDone}
	}
}

// RewindStages makes a stage workflow go on at stage i: the runs of the
// stages from i on are dropped, so they run again (their DONE tasks
// skipped).
func (s *Session) RewindStages(i int) {
	s.CurrentStageIndex = i
	if def := s.WorkflowDefinition; def == nil || def.Kind == workflow.KindGrimoire {
		return
	}
	for k := range s.Runs {
		if n, err := strconv.Atoi(k); err != nil || n >= i {
			delete(s.Runs, k)
		}
	}
}

// StepOutputLimit bounds the output a step run keeps in the session (and
// that later steps read): the last 256 KiB.
const StepOutputLimit = 256 << 10

// Session is the checkpoint written to .vibeteam/sessions/<id>.json.
//
// Its keys are in two cases on purpose: the stage workflow's fields came
// first, in camelCase as the stage format spells its keys; the grimoire's
// (blocked_reason, blocked_step, …) came with the coven format, in its
// snake_case. Sessions on disk carry both, so both keep their names: a
// rename would leave every saved session unreadable on resume.
type Session struct {
	Version  int    `json:"version"`
	ID       string `json:"id"`
	Workflow string `json:"workflow"` // the definition's id
	Goal     string `json:"goal,omitempty"`
	Status   Status `json:"status"`
	// CurrentStageIndex is the stage a stage workflow is at (the last one
	// started; the number of stages once all are done), for people and
	// for older vibeteams. Where a run goes on is its step runs, as for a
	// grimoire: a session written before stage workflows had them kept
	// its place here only, and gets them when read (upgradeStageRuns).
	CurrentStageIndex int `json:"currentStageIndex"`
	// Cursor is the address of the step to run next, e.g. "2.3/0": step
	// 0 of iteration 3 of the loop that is step 2.
	Cursor string `json:"cursor,omitempty"`
	// Runs are the step runs by address (a stage workflow's stage i at
	// "i").
	Runs map[string]*StepRun `json:"runs,omitempty"`
	// Bead is the bead a grimoire works on (.bead in templates); BeadSource
	// says where it came from: "bd" (its status follows the run) or a file.
	Bead       map[string]any `json:"bead,omitempty"`
	BeadSource string         `json:"beadSource,omitempty"`
	// The bead's git worktree, its branch and the base branch it merges
	// back into (grimoires run with --bead).
	Worktree   string `json:"worktree,omitempty"`
	Branch     string `json:"branch,omitempty"`
	BaseBranch string `json:"baseBranch,omitempty"`
	// Remote, when set, is the git remote whose base branch the merge
	// lands on (run --ready --remote): a resume or cancel asks it.
	Remote string `json:"remote,omitempty"`
	// MergeDecision is a person's answer to a pending merge, given with
	// resume --approve-merge (approve) or --reject-merge (reject);
	// MergeReason is the reason given with a rejection. Merged is the
	// merge commit once the work is back on the base branch.
	MergeDecision string `json:"mergeDecision,omitempty"`
	MergeReason   string `json:"mergeReason,omitempty"`
	Merged        string `json:"merged,omitempty"`
	// Gates are the merge gate's latest runs (AddGateRun), the last one
	// last.
	Gates []GateRun `json:"gates,omitempty"`
	// A blocked grimoire says why, with the failing step's output tail,
	// one line per loop iteration, and where it ran.
	BlockedReason      vocab.Reason `json:"blocked_reason,omitempty"`
	BlockedStep        string       `json:"blocked_step,omitempty"`
	BlockedContext     string       `json:"blocked_context,omitempty"`
	IterationSummaries []string     `json:"iteration_summaries,omitempty"`
	WorkDir            string       `json:"work_dir,omitempty"`
	// FailedSteps lists the step runs that failed while the grimoire went
	// on by design (on_fail: continue), as "name (address)".
	FailedSteps []string               `json:"failed_steps,omitempty"`
	TaskStatus  map[string]TaskStatus  `json:"taskStatus"`
	Tasks       map[string]*TaskRecord `json:"tasks"`
	// Agents adds up what the agents' structured output reported (tokens,
	// cost, tool calls), as of the last snapshot; nil when none did.
	Agents *AgentTotals `json:"agents,omitempty"`
	// RunBudget is what the run may spend besides the grimoire's budget
	// (run --max-cost, --max-tokens); a resume keeps it unless given again.
	RunBudget          *budget.Limit        `json:"runBudget,omitempty"`
	History            []HistoryEntry       `json:"history"`
	Vars               map[string]string    `json:"vars,omitempty"`
	WorkflowDefinition *workflow.Definition `json:"workflowDefinition"`
	// SourceDigest is the sha256 of the workflow file when the definition
	// was read from it, so resume can tell the file has changed since.
	SourceDigest string `json:"sourceDigest,omitempty"`
	// JournalSeq is the last journal change this snapshot holds.
	JournalSeq uint64     `json:"journalSeq,omitempty"`
	BaseDir    string     `json:"baseDir"`
	StartTime  time.Time  `json:"startTime"`
	UpdatedAt  time.Time  `json:"updatedAt"`
	EndTime    *time.Time `json:"endTime,omitempty"`
	Error      string     `json:"error,omitempty"`
	// Note is what a person should know of how the session ended that is
	// no error: a cancel that came while its merge landed (it completed).
	Note string `json:"note,omitempty"`
	// Intent is the git change under way (a merge, a worktree removal),
	// journaled before git is asked to make it; a resume finds it open
	// when a kill came in between, and checks with git what happened.
	Intent *GitIntent `json:"intent,omitempty"`
	// Limit is the usage or rate limit the session stopped on (status
	// limited), or waits out; nil otherwise.
	Limit *Limit `json:"limit,omitempty"`
	// Sandbox is the sandbox the session's processes run in (run
	// --sandbox, or on by default); nil: none. A resume runs in it again.
	Sandbox *sandbox.Config `json:"sandbox,omitempty"`
	// Backlog is set on the session of a `run --ready`: it runs beads,
	// each in a session of its own, instead of a workflow.
	Backlog *Backlog `json:"backlog,omitempty"`

	// Damage is what reading the session found cut short or unreadable in
	// its journal and skipped; never saved.
	Damage []string `json:"-"`
	// Broken is a line in the middle of the journal that could not be
	// read: the replay stopped before it, and what follows it is not in
	// the session. Never saved.
	Broken *JournalDamage `json:"-"`
}

// GitIntent is a change to the repository vibeteam is about to make.
type GitIntent struct {
	Kind   string    `json:"kind"` // merge | remove | resolve
	Branch string    `json:"branch"`
	Base   string    `json:"base,omitempty"`
	Tip    string    `json:"tip,omitempty"` // the branch's commit being merged
	Path   string    `json:"path,omitempty"`
	Time   time.Time `json:"time"`
}

// Git intent kinds.
const (
	IntentMerge  = "merge"
	IntentRemove = "remove"
	// IntentResolve: the base is being merged into the bead's branch in
	// its worktree, and its conflict resolved; a resume finds the worktree
	// in the middle of that merge and begins it again.
	IntentResolve = "resolve"
)

// Event is one line of the JSONL event log and the unit the core emits to the
// CLI. It marshals flat: {"time":..,"event":..,"session":..,"task":..,<fields>},
// the event being the payload's kind and the fields the payload's.
type Event struct {
	Time    time.Time
	Session string
	Task    string // the task it is about; "" for the session's
	Payload events.Payload
}

// Kind is the event's name, its payload's kind.
func (e Event) Kind() string {
	if e.Payload == nil {
		return ""
	}
	return e.Payload.Kind()
}
