// Package beads reads and updates beads, the issues of the beads tracker,
// through its bd CLI (or a JSON file), and chooses the grimoire a bead runs.
package beads

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
)

// Bead is one issue with every field bd gives (id, title, description,
// design, acceptance_criteria, notes, status, priority, issue_type,
// labels, dependencies, assignee, ...): templates read them as .bead.*.
type Bead map[string]any

func (b Bead) str(key string) string {
	s, _ := b[key].(string)
	return s
}

// ID is the bead's id.
func (b Bead) ID() string { return b.str("id") }

// Title is the bead's title.
func (b Bead) Title() string { return b.str("title") }

// Type is the bead's issue_type (feature, bug, task, ...).
func (b Bead) Type() string { return b.str("issue_type") }

// Labels are the bead's labels.
func (b Bead) Labels() []string {
	var out []string
	if list, ok := b["labels"].([]any); ok {
		for _, l := range list {
			if s, ok := l.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

// OpenBlockers names the beads that block this one and are not closed:
// the entries of its dependencies whose type is "blocks" (bd 1.0 writes
// dependency_type; older versions type), as "id (status)".
func (b Bead) OpenBlockers() []string {
	list, _ := b["dependencies"].([]any)
	var out []string
	for _, d := range list {
		dep, ok := d.(map[string]any)
		if !ok {
			continue
		}
		typ, _ := dep["dependency_type"].(string)
		if typ == "" {
			typ, _ = dep["type"].(string)
		}
		if typ != "" && typ != "blocks" {
			continue
		}
		id, _ := dep["id"].(string)
		if id == "" {
			id, _ = dep["depends_on_id"].(string)
		}
		status, _ := dep["status"].(string)
		if id == "" || status == "closed" {
			continue
		}
		if status == "" {
			status = "status unknown"
		}
		out = append(out, fmt.Sprintf("%s (%s)", id, status))
	}
	return out
}

// parseBeads reads bd's JSON for one bead: an array holding it (bd 1.0)
// or the object itself (older bd).
func parseBead(data []byte) (Bead, error) {
	data = bytes.TrimSpace(data)
	var b Bead
	if len(data) > 0 && data[0] == '[' {
		var list []Bead
		if err := json.Unmarshal(data, &list); err != nil {
			return nil, err
		}
		if len(list) != 1 {
			return nil, fmt.Errorf("want one bead, got %d", len(list))
		}
		b = list[0]
	} else if err := json.Unmarshal(data, &b); err != nil {
		return nil, err
	}
	if b == nil {
		return nil, errors.New("want a bead, got null")
	}
	return b, nil
}

// ErrNoBD: the bd command is not installed.
var ErrNoBD = errors.New("bd, the beads CLI, is not on PATH: install it (https://github.com/steveyegge/beads, e.g. npm install -g @beads/bd), or give the bead as a file with --bead-file F.json")

// Client runs bd in a directory.
type Client struct {
	Bin string // the bd program
	Dir string
}

// NewClient finds bd on PATH.
func NewClient(dir string) (*Client, error) {
	bin, err := exec.LookPath("bd")
	if err != nil {
		return nil, ErrNoBD
	}
	return &Client{Bin: bin, Dir: dir}, nil
}

// BDError is a bd command that failed, with bd's own message.
type BDError struct {
	Args     []string
	Stderr   string
	ExitCode int
}

func (e *BDError) Error() string {
	msg := strings.TrimSpace(e.Stderr)
	if msg == "" {
		msg = fmt.Sprintf("exit code %d", e.ExitCode)
	}
	return fmt.Sprintf("bd %s: %s", strings.Join(e.Args, " "), msg)
}

func (c *Client) run(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, c.Bin, args...)
	cmd.Dir = c.Dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		code := -1
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if stderr.Len() == 0 {
			stderr.WriteString(err.Error())
		}
		return nil, &BDError{Args: args, Stderr: stderr.String(), ExitCode: code}
	}
	return stdout.Bytes(), nil
}

// Show reads bead id (bd show ID --json).
func (c *Client) Show(ctx context.Context, id string) (Bead, error) {
	out, err := c.run(ctx, "show", id, "--json")
	if err != nil {
		return nil, err
	}
	b, err := parseBead(out)
	if err != nil {
		return nil, fmt.Errorf("bd show %s --json: %v", id, err)
	}
	return b, nil
}

// SetStatus sets bead id's status (bd update ID --status S).
func (c *Client) SetStatus(ctx context.Context, id, status string) error {
	_, err := c.run(ctx, "update", id, "--status", status)
	return err
}

// Close closes bead id with a reason (bd close ID --reason R).
func (c *Client) Close(ctx context.Context, id, reason string) error {
	_, err := c.run(ctx, "close", id, "--reason", reason)
	return err
}

// Ready lists the beads ready to work on (bd ready --json).
func (c *Client) Ready(ctx context.Context) ([]Bead, error) {
	out, err := c.run(ctx, "ready", "--json")
	if err != nil {
		return nil, err
	}
	var list []Bead
	if err := json.Unmarshal(bytes.TrimSpace(out), &list); err != nil {
		return nil, fmt.Errorf("bd ready --json: %v", err)
	}
	return list, nil
}

var unsafeRef = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// SanitizeID makes a bead id one path component and a valid part of a git
// branch name: other characters become "-", and what git refuses (".."
// ".lock" at the end, a leading "." or "-") is rewritten.
func SanitizeID(id string) string {
	s := unsafeRef.ReplaceAllString(id, "-")
	for strings.Contains(s, "..") {
		s = strings.ReplaceAll(s, "..", ".")
	}
	s = strings.Trim(s, ".-")
	for strings.HasSuffix(s, ".lock") {
		s = strings.TrimSuffix(s, ".lock") + "-lock"
	}
	if s == "" {
		s = "bead"
	}
	return s
}
