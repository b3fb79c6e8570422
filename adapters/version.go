package adapters

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/vibeteam/vibeteam/internal/excerpt"
)

// VersionCheck returns how to ask the adapter type's command for its
// version, and the version it was tested with; nil when its file has no
// version key (or the type is unknown).
func (r *Registry) VersionCheck(name string) *VersionCheck {
	r.mu.RLock()
	e, ok := r.entries[name]
	r.mu.RUnlock()
	if !ok {
		return nil
	}
	return e.load().info(e.source).Version
}

// Command is the adapter type's command ("" when unknown).
func (r *Registry) Command(name string) string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if e, ok := r.entries[name]; ok {
		return e.load().command
	}
	return ""
}

// AskVersion runs path with args, with no stdin, in an empty temporary
// directory and the environment as it is, and returns the first line it
// printed (on stdout, else on stderr). It never waits more than timeout
// (and a second for whatever the command left holding its output).
func AskVersion(path string, args []string, timeout time.Duration) (string, error) {
	dir, err := os.MkdirTemp("", "vibeteam-version-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Dir = dir
	var stdout, stderr cappedBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// Its own process group, killed as a whole on timeout: a CLI that is a
	// wrapper script leaves nothing running.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	err = cmd.Run()
	line := firstLine(stdout.b)
	if line == "" {
		line = firstLine(stderr.b)
	}
	switch {
	case ctx.Err() != nil:
		return "", fmt.Errorf("did not finish within %s", timeout)
	case err != nil && line != "":
		return "", fmt.Errorf("failed (%v): %s", err, line)
	case err != nil:
		return "", fmt.Errorf("failed: %v", err)
	case line == "":
		return "", errors.New("printed nothing")
	}
	return line, nil
}

// cappedBuffer keeps the first 64 KiB written to it, and takes the rest
// without keeping it, so that the command never blocks on a full pipe.
type cappedBuffer struct{ b []byte }

func (c *cappedBuffer) Write(p []byte) (int, error) {
	if room := 64<<10 - len(c.b); room > 0 {
		c.b = append(c.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

var ansiEscape = regexp.MustCompile(`\x1b\[[0-9;?]*[ -/]*[@-~]`)

// firstLine is the first line of out that is not blank, without terminal
// escapes or control characters, at most 200 characters.
func firstLine(out []byte) string {
	for _, l := range strings.Split(ansiEscape.ReplaceAllString(string(out), ""), "\n") {
		l = strings.TrimSpace(strings.Map(func(r rune) rune {
			if r < 0x20 && r != '\t' || r == 0x7f {
				return -1
			}
			return r
		}, l))
		if l == "" {
			continue
		}
		return excerpt.Runes(l, 200, "…")
	}
	return ""
}

// ContainsVersion reports whether line holds version as a whole version:
// "codex-cli 0.169.0" holds 0.169.0, but "2.1.197" does not hold 2.1.19
// nor 2.1, nor "12.1.197" 2.1.197.
func ContainsVersion(line, version string) bool {
	isDigit := func(b byte) bool { return b >= '0' && b <= '9' }
	for from := 0; ; {
		i := strings.Index(line[from:], version)
		if i < 0 {
			return false
		}
		start, end := from+i, from+i+len(version)
		before := start == 0 || !isDigit(line[start-1]) && line[start-1] != '.'
		after := end == len(line) || !isDigit(line[end]) && !(line[end] == '.' && end+1 < len(line) && isDigit(line[end+1]))
		if before && after {
			return true
		}
		from = start + 1
	}
}

var versionNumber = regexp.MustCompile(`\d+(\.\d+)+`)

// CompareVersion compares the first dotted version number in line with
// tested: -1 when it is older, 0 the same, 1 newer; ok is false when line
// holds no version number to compare.
func CompareVersion(line, tested string) (cmp int, ok bool) {
	if ContainsVersion(line, tested) {
		return 0, true
	}
	got, want := versionNumber.FindString(line), versionNumber.FindString(tested)
	if got == "" || want == "" {
		return 0, false
	}
	a, b := strings.Split(got, "."), strings.Split(want, ".")
	for i := 0; i < max(len(a), len(b)); i++ {
		var x, y int
		if i < len(a) {
			x, _ = strconv.Atoi(a[i])
		}
		if i < len(b) {
			y, _ = strconv.Atoi(b[i])
		}
		switch {
		case x < y:
			return -1, true
		case x > y:
			return 1, true
		}
	}
	return 0, true
}

// Installed is what one adapter command says its version is.
type Installed struct {
	Line   string // the first line of its version output ("" when it failed)
	Tested string // the version the adapter was tested with ("" for none)
	Cmp    int    // CompareVersion of Line with Tested
	Known  bool   // Line and Tested could be compared
	Err    error
}

// Untested reports whether the installed version is known to differ from
// the tested one.
func (v Installed) Untested() bool { return v.Known && v.Cmp != 0 }

// String says it in a few words: "2.1.332 (Claude Code), newer than the
// tested 2.1.197".
func (v Installed) String() string {
	switch {
	case v.Err != nil:
		return "version unknown (" + v.Err.Error() + ")"
	case v.Tested == "":
		return v.Line + ", no tested version recorded"
	case !v.Known:
		return v.Line + ", not comparable with the tested " + v.Tested
	case v.Cmp > 0:
		return v.Line + ", newer than the tested " + v.Tested
	case v.Cmp < 0:
		return v.Line + ", older than the tested " + v.Tested
	}
	return v.Line + ", the tested version"
}

// Risk says what running a version other than the tested one risks.
func (v Installed) Risk() string {
	switch {
	case !v.Untested():
		return ""
	case v.Cmp > 0:
		return "its screens or output may have changed since: a dialog may not be recognised (the task then asks a person or parks), and its flags may differ"
	}
	return "it may lack flags or screens the adapter uses (update it)"
}

var (
	probeMu sync.Mutex
	probes  = map[string]*probe{}
)

type probe struct {
	once sync.Once
	v    Installed
}

// ProbeVersion asks the adapter type's command for its version, once per
// process (the answer is kept), and compares it with the tested one. A
// type without a version key gives a zero Installed.
func (r *Registry) ProbeVersion(name string, timeout time.Duration) Installed {
	vc := r.VersionCheck(name)
	if vc == nil {
		return Installed{}
	}
	path, err := exec.LookPath(r.Command(name))
	if err != nil {
		return Installed{Tested: vc.Tested, Err: err}
	}
	key := path + "\x00" + strings.Join(vc.Args, "\x00") + "\x00" + vc.Tested
	probeMu.Lock()
	p := probes[key]
	if p == nil {
		p = &probe{}
		probes[key] = p
	}
	probeMu.Unlock()
	p.once.Do(func() {
		line, err := AskVersion(path, vc.Args, timeout)
		p.v = Installed{Line: line, Tested: vc.Tested, Err: err}
		if err == nil && vc.Tested != "" {
			p.v.Cmp, p.v.Known = CompareVersion(line, vc.Tested)
		}
	})
	return p.v
}
