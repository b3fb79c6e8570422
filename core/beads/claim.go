package beads

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
)

// ClaimError is bd refusing a claim (bd update ID --claim): the bead is
// assigned to another (By), or is in a status a claim does not take
// (Status: blocked, closed, in_progress with no assignee, ...).
type ClaimError struct {
	ID     string
	By     string // the claimant, when another has it
	Status string // the status that is not claimable, otherwise
	Line   string // bd's own words
}

func (e *ClaimError) Error() string {
	if e.By != "" {
		return fmt.Sprintf("bead %s is claimed by %s", e.ID, e.By)
	}
	return fmt.Sprintf("bead %s cannot be claimed: its status is %s", e.ID, e.Status)
}

// Claim claims bead id for whoever bd takes you for (bd update ID --claim
// --json): atomically, it becomes yours and in_progress; claiming one that
// is yours already succeeds again. The bead comes back as bd reads it after
// the claim (its fields and labels; bd leaves its dependencies out). A
// bead assigned to another, or in a status a claim does not take, is a
// *ClaimError.
func (c *Client) Claim(ctx context.Context, id string) (Bead, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	args := []string{"update", id, "--claim", "--json"}
	stdout, stderr, err := c.call(ctx, args...)
	if err != nil {
		var be *BDError
		if errors.As(err, &be) {
			if ce := claimRefusal(id, be.Stderr); ce != nil {
				return nil, ce
			}
		}
		return nil, err
	}
	c.notices(stderr)
	list, err := parseBeads(stdout)
	if err == nil && len(list) != 1 {
		err = fmt.Errorf("want one bead, got %d", len(list))
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %v", Command(args...), err)
	}
	return list[0], nil
}

// claimRefusal reads bd's refusal of a claim on stderr:
// "Error claiming ID: issue already claimed by OTHER", or
// "Error claiming ID: issue not claimable: status S".
func claimRefusal(id, stderr string) *ClaimError {
	for _, l := range strings.Split(stderr, "\n") {
		l = strings.TrimSpace(l)
		_, why, ok := strings.Cut(l, "Error claiming ")
		if !ok {
			continue
		}
		if _, why, ok = strings.Cut(why, ": "); !ok {
			continue
		}
		if by, ok := strings.CutPrefix(why, "issue already claimed by "); ok {
			return &ClaimError{ID: id, By: strings.TrimSpace(by), Line: l}
		}
		if st, ok := strings.CutPrefix(why, "issue not claimable: status "); ok {
			return &ClaimError{ID: id, Status: strings.TrimSpace(st), Line: l}
		}
	}
	return nil
}

// ShowAll reads several beads with one bd call (bd show A B ... --json),
// by the id each bead gives. An id bd does not find is left out (bd says so
// on stderr, which the caller's Notice hears); the call fails only when bd
// finds none.
func (c *Client) ShowAll(ctx context.Context, ids []string) (map[string]Bead, error) {
	out := map[string]Bead{}
	if len(ids) == 0 {
		return out, nil
	}
	args := []string{"show"}
	for _, id := range ids {
		if err := checkID(id); err != nil {
			return nil, err
		}
		args = append(args, id)
	}
	args = append(args, "--json")
	stdout, err := c.run(ctx, args...)
	if err != nil {
		return nil, err
	}
	list, err := parseBeadList(stdout)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", Command(args...), err)
	}
	for _, b := range list {
		if b.ID() != "" {
			out[b.ID()] = b
		}
	}
	return out, nil
}

// parseBeadList reads one bead or a list of them (bd show of several ids
// prints a list; older bd printed the object of one).
func parseBeadList(data []byte) ([]Bead, error) {
	v, err := decodeJSON(data)
	if err != nil {
		return nil, err
	}
	if m, ok := v.(map[string]any); ok {
		return []Bead{m}, nil
	}
	return parseBeads(data)
}

// Closing is a bead to close and why.
type Closing struct{ ID, Reason string }

// CloseAll closes several beads with one bd call (bd close A B --reason RA
// --reason RB --json; with Force, --force), each with its own reason. bd
// closes each on its own: refused are the ids it did not close, each with
// bd's line about it (an open blocker, an epic's open children). The error
// is bd failing as a whole.
func (c *Client) CloseAll(ctx context.Context, list []Closing) (refused map[string]string, _ error) {
	if len(list) == 0 {
		return nil, nil
	}
	args := []string{"close"}
	for _, cl := range list {
		if err := checkID(cl.ID); err != nil {
			return nil, err
		}
		args = append(args, cl.ID)
	}
	for _, cl := range list {
		args = append(args, "--reason", cl.Reason)
	}
	if c.Force {
		args = append(args, "--force")
	}
	args = append(args, "--json")
	stdout, stderr, err := c.call(ctx, args...)
	var be *BDError
	switch {
	case errors.As(err, &be) && be.ExitCode == 1 && closeRefusals(list, be.Stderr) != nil:
		// bd closed none: each id's refusal is on stderr.
		stdout, stderr = nil, []byte(be.Stderr)
	case err != nil:
		return nil, err
	}
	closed := map[string]bool{}
	if len(stdout) > 0 {
		done, err := parseBeadList(stdout)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", Command(args...), err)
		}
		for _, b := range done {
			closed[b.ID()] = true
		}
	}
	refused = map[string]string{}
	lines := closeRefusals(list, string(stderr))
	for _, cl := range list {
		if !closed[cl.ID] {
			refused[cl.ID] = lines[cl.ID]
			if refused[cl.ID] == "" {
				refused[cl.ID] = "bd did not close it"
			}
		}
	}
	// What bd said about no bead of the list is a notice.
	var rest []string
	for _, l := range strings.Split(string(stderr), "\n") {
		if l = strings.TrimSpace(l); l != "" && !mentionsAny(l, list) {
			rest = append(rest, l)
		}
	}
	c.notices([]byte(strings.Join(rest, "\n")))
	return refused, nil
}

// closeRefusals are bd's stderr lines about each id of list (nil when
// none is about any).
func closeRefusals(list []Closing, stderr string) map[string]string {
	var out map[string]string
	for _, l := range strings.Split(stderr, "\n") {
		l = strings.TrimSpace(l)
		for _, cl := range list {
			if mentions(l, cl.ID) {
				if out == nil {
					out = map[string]string{}
				}
				if out[cl.ID] == "" {
					out[cl.ID] = l
				}
			}
		}
	}
	return out
}

func mentionsAny(line string, list []Closing) bool {
	for _, cl := range list {
		if mentions(line, cl.ID) {
			return true
		}
	}
	return false
}

// mentions: line names id as a word ("cannot close bd-1:", not bd-10).
func mentions(line, id string) bool {
	for i := 0; ; {
		j := strings.Index(line[i:], id)
		if j < 0 {
			return false
		}
		j += i
		end := j + len(id)
		if (j == 0 || !idChar(line[j-1])) && (end == len(line) || !idChar(line[end])) {
			return true
		}
		i = j + 1
	}
}

func idChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_'
}

// EligibleEpics are the ids of the open epics bd finds eligible for
// closure, every child closed (bd epic status --eligible-only --json).
// Nothing closes them by itself.
func (c *Client) EligibleEpics(ctx context.Context) ([]string, error) {
	args := []string{"epic", "status", "--eligible-only", "--json"}
	list, err := query(c, ctx, parseBeads, args...)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, st := range list {
		epic, _ := st["epic"].(map[string]any)
		if ok, _ := st["eligible_for_close"].(bool); ok && Bead(epic).ID() != "" {
			ids = append(ids, Bead(epic).ID())
		}
	}
	return ids, nil
}

// Children are the children of bead id, of every status (bd children ID
// --json).
func (c *Client) Children(ctx context.Context, id string) ([]Bead, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	args := []string{"children", id, "--json"}
	list, err := query(c, ctx, parseBeads, args...)
	if err != nil {
		return nil, err
	}
	return list, nil
}

// Blocked are the beads bd calls blocked (bd blocked --json), each with the
// ids that hold it back in blocked_by.
func (c *Client) Blocked(ctx context.Context) ([]Bead, error) {
	args := []string{"blocked", "--json"}
	list, err := query(c, ctx, parseBeads, args...)
	if err != nil {
		return nil, err
	}
	return list, nil
}

// BlockedByIDs are the ids a bead of bd blocked holds in its blocked_by.
func (b Bead) BlockedByIDs() []string {
	var by []string
	ids, _ := b["blocked_by"].([]any)
	for _, v := range ids {
		if id, ok := v.(string); ok {
			by = append(by, id)
		}
	}
	return by
}

// Claimed is the tracker of a run whose bead was claimed for it: the
// run's first "in_progress" is that claim, not set again (one bd call
// less a bead).
type Claimed struct {
	*Client
	// Parent is the bead's parent: when the bead closes, the epic is
	// closed too if that made it eligible (its last child).
	Parent  string
	started atomic.Bool
}

// Close is Client.Close, then the close of the epics it made eligible; an
// epic bd does not close is a warning (warn), the bead being closed.
func (t *Claimed) Close(ctx context.Context, id, reason string) error {
	if err := t.Client.Close(ctx, id, reason); err != nil || t.Parent == "" {
		return err
	}
	CloseEligibleEpics(ctx, t.Client, []string{t.Parent}, func(epic, why string) {
		t.warn(fmt.Sprintf("epic %s, eligible for closure after %s, was not closed: %s", epic, id, why))
	})
	return nil
}

// SetStatus is Client.SetStatus but for the first in_progress.
func (t *Claimed) SetStatus(ctx context.Context, id, status string) error {
	if status == StatusInProgress && t.started.CompareAndSwap(false, true) {
		return nil
	}
	return t.Client.SetStatus(ctx, id, status)
}
