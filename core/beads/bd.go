package beads

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// ErrNoBD: the bd command is not installed. The beads CLI is published on
// npm as @beads/bd, in Homebrew as beads, and as the Go module
// github.com/steveyegge/beads, whose bd needs cgo and the gms_pure_go tag
// for its embedded database (its docs/INSTALLING.md).
var ErrNoBD = errors.New("bd, the beads CLI, is not on PATH: install it (npm install -g @beads/bd, brew install beads, " +
	"or CGO_ENABLED=1 go install -tags gms_pure_go github.com/steveyegge/beads/cmd/bd@latest)")

// NoBDFileHint is what a run of one bead can do without bd.
const NoBDFileHint = "or give the bead as a JSON file with --bead-file F.json (the fields of `bd show ID --json`; its status is then left alone)"

// Client runs bd in a directory: the project whose .beads it works on.
// Every call takes a context; the caller bounds it with a timeout.
type Client struct {
	Bin string   // the bd program (a path, or a name looked up on PATH)
	Dir string   // bd's working directory; "" is the current one
	Env []string // bd's environment; nil is vibeteam's own
	// Force closes the bead with bd close --force: the run was started
	// despite its open blockers (run --force), which bd close refuses.
	Force bool
	// Notice, if set, is told each line bd wrote on stderr when it
	// succeeded ("Showing 100 of 250 issues", a migration notice), which
	// would otherwise be lost.
	Notice func(line string)
	// Warn, if set, is told what vibeteam leaves out of bd's output (an
	// item of bd ready without an id); else Notice is.
	Warn func(msg string)
}

// SetNotice sets where bd's stderr notices go (Notice): the engine makes
// them warning events of the run.
func (c *Client) SetNotice(f func(line string)) { c.Notice = f }

// NewClient finds bd on PATH; ErrNoBD when it is not there.
func NewClient(dir string) (*Client, error) {
	bin, err := exec.LookPath("bd")
	if err != nil {
		return nil, ErrNoBD
	}
	return &Client{Bin: bin, Dir: dir}, nil
}

// BDError is a bd command that failed: its arguments, what it wrote on
// stderr (its own message), and its exit code (-1 when it did not exit: it
// could not start, or was stopped when the context ended). A failed status
// update is one of these, for the caller to report as a warning.
type BDError struct {
	Args     []string
	Stderr   string
	ExitCode int
	Err      error  // why bd did not run or was stopped, if it was
	Stdout   []byte // what bd printed on stdout all the same
}

// maxStderr bounds the part of bd's stderr an error quotes.
const maxStderr = 2000

func (e *BDError) Error() string {
	msg := strings.TrimSpace(e.Stderr)
	if len(msg) > maxStderr {
		msg = "…" + msg[len(msg)-maxStderr:]
	}
	switch {
	case msg != "":
	case e.Err != nil:
		msg = e.Err.Error()
	default:
		msg = fmt.Sprintf("exit code %d", e.ExitCode)
	}
	return fmt.Sprintf("%s: %s", Command(e.Args...), msg)
}

func (e *BDError) Unwrap() error { return e.Err }

// Said is bd's own message, its first line, without "Error: "; the
// error's text when bd said nothing.
func (e *BDError) Said() string {
	msg := strings.TrimSpace(e.Stderr)
	if msg == "" {
		return strings.TrimPrefix(e.Error(), Command(e.Args...)+": ")
	}
	msg, _, _ = strings.Cut(msg, "\n")
	return strings.TrimPrefix(strings.TrimSpace(msg), "Error: ")
}

// Command is the bd command line for args, as a shell would take it:
// bd close bd-1 --reason 'all done'.
func Command(args ...string) string {
	var b strings.Builder
	b.WriteString("bd")
	for _, a := range args {
		b.WriteByte(' ')
		b.WriteString(shellQuote(a))
	}
	return b.String()
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@%+,", r))
	}) < 0 {
		return s
	}
	if strings.IndexFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0 {
		return strconv.Quote(s)
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// bdWaitDelay is how long bd's output is read after bd itself exited.
const bdWaitDelay = 2 * time.Second

// run runs bd with args and returns its stdout, or a *BDError.
func (c *Client) run(ctx context.Context, args ...string) ([]byte, error) {
	stdout, stderr, err := c.call(ctx, args...)
	if err == nil {
		c.notices(stderr)
	}
	return stdout, err
}

// notices tells c.Notice each line bd wrote on stderr while succeeding.
func (c *Client) notices(stderr []byte) {
	if c.Notice == nil {
		return
	}
	for _, l := range strings.Split(string(stderr), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			c.Notice(l)
		}
	}
}

// warn says what vibeteam left out of what bd printed (Warn, else Notice).
func (c *Client) warn(msg string) {
	switch {
	case c.Warn != nil:
		c.Warn(msg)
	case c.Notice != nil:
		c.Notice(msg)
	}
}

// call runs bd with args: its stdout and stderr, or a *BDError (with the
// stdout bd printed, for a call that reports per bead).
func (c *Client) call(ctx context.Context, args ...string) (stdoutData, stderrData []byte, _ error) {
	cmd := exec.CommandContext(ctx, c.Bin, args...)
	cmd.Dir, cmd.Env = c.Dir, c.Env
	supervise(cmd)
	// A child of bd (a wrapper's, a daemon's) that keeps its output open
	// does not hold the run: the pipes close a moment after bd exits.
	cmd.WaitDelay = bdWaitDelay
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err == nil || errors.Is(err, exec.ErrWaitDelay) {
		// ErrWaitDelay: bd succeeded; a child of its kept the pipe.
		return stdout.Bytes(), stderr.Bytes(), nil
	}
	be := &BDError{Args: args, Stderr: stderr.String(), ExitCode: -1, Stdout: stdout.Bytes()}
	if strings.TrimSpace(be.Stderr) == "" {
		// bd's JSON error on stdout, {"error":"…","schema_version":1}.
		if _, jerr := decodeJSON(stdout.Bytes()); jerr != nil && strings.HasPrefix(jerr.Error(), "reported an error: ") {
			be.Stderr = strings.TrimPrefix(jerr.Error(), "reported an error: ")
		}
	}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		be.Err = ctx.Err()
		if be.Stderr == "" {
			be.Err = fmt.Errorf("stopped: %w", ctx.Err())
		}
	case errors.As(err, &ee):
		be.ExitCode = ee.ExitCode()
	default:
		be.Err = err
	}
	return nil, nil, be
}

// checkID refuses an id bd would misread: empty, or taken for a flag.
func checkID(id string) error {
	switch {
	case id == "":
		return errors.New("bd: no bead id")
	case strings.HasPrefix(id, "-"):
		return fmt.Errorf("bd: bead id %q starts with '-'", id)
	}
	return nil
}

// query runs bd with args and reads its JSON output with parse; output it
// cannot read is an error naming the command.
func query[T any](c *Client, ctx context.Context, parse func([]byte) (T, error), args ...string) (T, error) {
	var zero T
	out, err := c.run(ctx, args...)
	if err != nil {
		return zero, err
	}
	v, err := parse(out)
	if err != nil {
		return zero, fmt.Errorf("%s: %v", Command(args...), err)
	}
	return v, nil
}

// Show reads bead id (bd show ID --json). bd may take a prefix of an id:
// the bead's own ID() is the full one.
func (c *Client) Show(ctx context.Context, id string) (Bead, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	args := []string{"show", id, "--json"}
	b, err := query(c, ctx, parseBead, args...)
	if err != nil {
		return nil, err
	}
	return b, nil
}

// SetStatus sets bead id's status (bd update ID --status S): StatusInProgress
// when a run picks it up, StatusBlocked when the run is blocked or waits for
// a review, StatusOpen when it is cancelled.
func (c *Client) SetStatus(ctx context.Context, id, status string) error {
	if err := checkID(id); err != nil {
		return err
	}
	if status == "" {
		return errors.New("bd update: no status")
	}
	_, err := c.run(ctx, "update", id, "--status", status)
	return err
}

// Release gives bead id back: open, and assigned to nobody, so that
// anyone's claim takes it again (bd update ID --status open --assignee "").
func (c *Client) Release(ctx context.Context, id string) error {
	if err := checkID(id); err != nil {
		return err
	}
	_, err := c.run(ctx, "update", id, "--status", "open", "--assignee", "")
	return err
}

// Close closes bead id, completed, with a summary of the work
// (bd close ID --reason R). bd refuses a bead with open blockers, and an
// epic with open children; with Force (a run started with --force) it is
// closed anyway (--force).
func (c *Client) Close(ctx context.Context, id, reason string) error {
	if err := checkID(id); err != nil {
		return err
	}
	args := []string{"close", id, "--reason", reason}
	if c.Force {
		args = append(args, "--force")
	}
	_, err := c.run(ctx, args...)
	return err
}

// Ready lists the beads ready to work on, as bd decides it (bd ready
// --json --limit 0: bd stops at 100 without --limit, saying so only on
// stderr).
func (c *Client) Ready(ctx context.Context) ([]Bead, error) {
	args := []string{"ready", "--json", "--limit", "0"}
	list, err := query(c, ctx, parseBeads, args...)
	if err != nil {
		return nil, err
	}
	// A bead without an id cannot be worked on nor named: it is left out,
	// and said so, rather than shown as a row with no id.
	kept := list[:0]
	for i, b := range list {
		if b.ID() == "" {
			c.warn(fmt.Sprintf("%s: item %d has no id; left out", Command(args...), i+1))
			continue
		}
		kept = append(kept, b)
	}
	return kept, nil
}

// BlockedBy is what holds bead id back, as bd decides it (bd blocked
// --json: a pinned blocker does not block, the child of a blocked parent
// is blocked, conditional-blocks and waits-for count): the ids bd gives in
// its blocked_by, each with its status as the bead shows it ("id
// (status)"); none when bd does not list the bead as blocked.
func (c *Client) BlockedBy(ctx context.Context, b Bead) ([]string, error) {
	list, err := c.Blocked(ctx)
	if err != nil {
		return nil, err
	}
	status := map[string]string{} // of every dependency the bead shows
	deps, _ := b["dependencies"].([]any)
	for _, d := range deps {
		if m, ok := d.(map[string]any); ok {
			id, _ := m["id"].(string)
			st, _ := m["status"].(string)
			status[id] = st
		}
	}
	for _, x := range list {
		if x.ID() != b.ID() {
			continue
		}
		var by []string
		for _, id := range x.BlockedByIDs() {
			by = append(by, Blocker{ID: id, Status: status[id]}.String())
		}
		if len(by) == 0 {
			by = []string{"(bd does not say which)"}
		}
		return by, nil
	}
	return nil, nil
}

// OpenBlockers is b.OpenBlockers, with the status of each blocker b does not
// carry (older bd) read with bd show; one bd cannot show stays "status
// unknown", and open.
func (c *Client) OpenBlockers(ctx context.Context, b Bead) ([]string, error) {
	var out []string
	for _, bl := range b.Blockers() {
		if bl.Status == "" {
			other, err := c.Show(ctx, bl.ID)
			if ctx.Err() != nil {
				return nil, err
			}
			if err == nil {
				bl.Status = other.Status()
			}
		}
		if !done(bl.Status) {
			out = append(out, bl.String())
		}
	}
	return out, nil
}
