package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
)

// RefusedReason is the reason a step fails with when the sandbox refused
// one of its writes.
const RefusedReason = "sandbox_refused"

// absPath finds absolute paths in a line of output, quoted or not.
var absPath = regexp.MustCompile(`/[^\s'"` + "`" + `:,;()\[\]]+`)

// Refused reads a process's output for a write the sandbox refused (the
// "Read-only file system" of EROFS, as shells, coreutils, Go, Python and
// Node print it) to a path outside the writable set, and says which path
// and which sandbox: setting would allow it; "" when there is none.
func (p *Plan) Refused(output string) string {
	if p == nil {
		return ""
	}
	for _, line := range strings.Split(output, "\n") {
		low := strings.ToLower(line)
		if !strings.Contains(low, "read-only file system") && !strings.Contains(line, "EROFS") {
			continue
		}
		// The path nearest the message is the one refused ("/bin/sh: 1:
		// cannot create /x: Read-only file system" names the shell first).
		at := strings.Index(low, "read-only file system")
		if at < 0 {
			at = strings.Index(line, "EROFS")
		}
		best, bestDist := "", len(line)+1
		for _, m := range absPath.FindAllStringIndex(line, -1) {
			path := filepath.Clean(line[m[0]:m[1]])
			if path == "/" {
				continue
			}
			dist := at - m[1]
			if m[0] > at {
				dist = m[0] - at
			}
			if dist < bestDist {
				best, bestDist = path, dist
			}
		}
		if path := best; path != "" {
			if p.writable(path) && !guarded(path) {
				continue // writable here: not the sandbox's refusal
			}
			if guarded(path) {
				return fmt.Sprintf("the sandbox refused a write to %s: the repository's hooks and config, .vibeteam/ and shell start-up files are always read-only inside; only --no-sandbox allows it", path)
			}
			return fmt.Sprintf("the sandbox refused a write to %s (read-only inside); sandbox: {write: [%s]} on the step, the workflow or .vibeteam/config.yaml allows it", path, writeEntry(path))
		}
	}
	return ""
}

func (p *Plan) writable(path string) bool {
	for _, w := range p.Writable {
		if under(path, w) {
			return true
		}
	}
	return false
}

// writeEntry is the write: entry that would allow path: its directory
// when that exists (a new file's), else the nearest one that does.
func writeEntry(path string) string {
	dir := filepath.Dir(path)
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		dir = path
	}
	for dir != "/" {
		if _, err := os.Stat(dir); err == nil {
			break
		}
		dir = filepath.Dir(dir)
	}
	if home, err := os.UserHomeDir(); err == nil && home != "/" {
		if rel, ok := strings.CutPrefix(dir, home+"/"); ok {
			return "~/" + rel
		}
	}
	return dir
}

// guarded reports whether path is one of what a sandbox keeps read-only
// even inside a writable directory.
func guarded(path string) bool {
	if strings.Contains(path, "/.git/hooks") || strings.HasSuffix(path, "/.git/config") || strings.Contains(path, "/.vibeteam/") || strings.HasSuffix(path, "/.vibeteam") {
		return true
	}
	for _, f := range startupFiles {
		if filepath.Base(path) == f {
			return true
		}
	}
	return false
}

// Watch reads a process's output as it comes for the first write the
// sandbox refused (Refused, line by line); nil for a process with no
// sandbox, whose methods do nothing.
func (p *Plan) Watch() *Watch {
	if p == nil {
		return nil
	}
	return &Watch{plan: p}
}

// Watch is a process's output watched for a refused write. Its methods
// may be called from the goroutines that read the process's output.
type Watch struct {
	plan    *Plan
	mu      sync.Mutex
	partial []byte // the line not ended yet (at most maxLine)
	found   string
}

// maxLine bounds the part of a line kept between writes: a refusal is
// printed on a line of its own, and a flood without newlines is not one.
const maxLine = 4096

func (w *Watch) Write(b []byte) (int, error) {
	if w == nil {
		return len(b), nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.found != "" {
		return len(b), nil
	}
	data := append(w.partial, b...)
	end := bytes.LastIndexByte(data, '\n')
	if end >= 0 {
		w.found = w.plan.Refused(string(data[:end]))
		data = data[end+1:]
	}
	if len(data) > maxLine {
		data = data[len(data)-maxLine:]
	}
	w.partial = append(w.partial[:0], data...)
	return len(b), nil
}

// Found is what Refused says of the first refused write seen ("" for
// none), the unfinished last line included.
func (w *Watch) Found() string {
	if w == nil {
		return ""
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.found == "" && len(w.partial) > 0 {
		w.found = w.plan.Refused(string(w.partial))
	}
	return w.found
}
