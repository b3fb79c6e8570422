package sandbox

import (
	"context"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// goCaches are Go's build and module caches as `go env` reports them, asked
// once per vibeteam ("" each where there is no go).
var goCaches = sync.OnceValues(func() (string, string) {
	if _, err := exec.LookPath("go"); err != nil {
		return "", ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "env", "GOCACHE", "GOMODCACHE").Output()
	if err != nil {
		return "", ""
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 {
		return "", ""
	}
	return strings.TrimSpace(lines[0]), strings.TrimSpace(lines[1])
})

// goCachesUnasked are Go's caches as its variables and defaults say,
// without running go (validate and preview start no process); a go.env
// file of the user's may say otherwise.
func goCachesUnasked() (string, string) {
	if _, err := exec.LookPath("go"); err != nil {
		return "", ""
	}
	gocache := os.Getenv("GOCACHE")
	if gocache == "" {
		if dir, err := os.UserCacheDir(); err == nil {
			gocache = filepath.Join(dir, "go-build")
		}
	}
	gomod := os.Getenv("GOMODCACHE")
	if gomod == "" {
		gopath := filepath.SplitList(os.Getenv("GOPATH"))
		if len(gopath) == 0 || gopath[0] == "" {
			if home, err := os.UserHomeDir(); err == nil {
				gopath = []string{filepath.Join(home, "go")}
			}
		}
		if len(gopath) > 0 {
			gomod = filepath.Join(gopath[0], "pkg", "mod")
		}
	}
	return gocache, gomod
}

// CachePaths are the toolchains' build caches: Go's (made when go is
// there), npm's, pip's and cargo's (where they exist).
func (p *Policy) CachePaths() []string { return p.cachePaths(true) }

// CachesToShow are CachePaths, for validate and preview: nothing is made.
func (p *Policy) CachesToShow() []string { return p.cachePaths(false) }

func (p *Policy) cachePaths(make bool) []string {
	var paths []string
	gocache, gomod := goCaches()
	if !make {
		gocache, gomod = goCachesUnasked()
	}
	for _, c := range []string{gocache, gomod} {
		if c != "" && filepath.IsAbs(c) && c != "off" {
			if make {
				_ = os.MkdirAll(c, 0o755)
			}
			paths = append(paths, c)
		}
	}
	env := func(name, def string) string {
		if v := os.Getenv(name); v != "" {
			return v
		}
		if p.Home == "" {
			return ""
		}
		return filepath.Join(p.Home, def)
	}
	cargo := env("CARGO_HOME", ".cargo")
	for _, c := range []string{
		env("npm_config_cache", ".npm"), env("PIP_CACHE_DIR", ".cache/pip"),
		filepath.Join(cargo, "registry"), filepath.Join(cargo, "git"),
	} {
		if c != "" && isDir(c) {
			paths = append(paths, c)
		}
	}
	return paths
}

// cacheMounts makes the caches writable: the user's own (shared), or a
// directory of the session's in their place (private).
func (p *Policy) cacheMounts() ([]mount, error) {
	var ms []mount
	for _, c := range p.CachePaths() {
		if under(c, p.WorkDir) {
			continue // writable already
		}
		src := c
		if p.Config.Caches == CachesPrivate {
			src = filepath.Join(p.StateDir, "caches", strings.Trim(strings.ReplaceAll(c, "/", "_"), "_"))
			if err := os.MkdirAll(src, 0o755); err != nil {
				return nil, err
			}
		}
		ms = append(ms, mount{"--bind", src, c})
	}
	return ms, nil
}

// AgentState are the places agents keep their configuration, logins and
// sessions: read inside, but what is written there stays in the session.
func (p *Policy) AgentState() []string {
	if p.Home == "" {
		return nil
	}
	xdg := func(name, def string) string {
		if v := os.Getenv(name); v != "" && filepath.IsAbs(v) {
			return v
		}
		return filepath.Join(p.Home, def)
	}
	paths := []string{
		filepath.Join(p.Home, ".claude"), filepath.Join(p.Home, ".claude.json"), filepath.Join(p.Home, ".codex"), filepath.Join(p.Home, ".gemini"),
		filepath.Join(xdg("XDG_CONFIG_HOME", ".config"), "opencode"),
		filepath.Join(xdg("XDG_DATA_HOME", ".local/share"), "opencode"),
		filepath.Join(xdg("XDG_STATE_HOME", ".local/state"), "opencode"),
		filepath.Join(xdg("XDG_CACHE_HOME", ".cache"), "opencode"),
	}
	// Codex (0.171) writes ~/.codex (its PATH aliases, its app-server)
	// even with its CODEX_HOME elsewhere.
	for _, name := range []string{"CODEX_HOME", "CLAUDE_CONFIG_DIR"} {
		if v := os.Getenv(name); v != "" && filepath.IsAbs(v) && !slices.Contains(paths, filepath.Clean(v)) {
			paths = append(paths, filepath.Clean(v))
		}
	}
	return paths
}

// skipCopy are what an agent's state holds that is large and not needed
// to run: the history of earlier sessions, caches.
var skipCopy = map[string]bool{"projects": true, "todos": true, "shell-snapshots": true, "file-history": true, "sessions": true, "log": true, "logs": true, "tmp": true, "node_modules": true, ".git": true}

// maxCopy is the largest file an agent's state copy takes.
const maxCopy = 16 << 20

// stateMounts binds the session's copy of each agent's state over the
// original: the first process of the session makes the copies, a resume
// finds them made.
func (p *Policy) stateMounts() ([]mount, error) {
	var ms []mount
	for _, src := range p.AgentState() {
		fi, err := os.Stat(src)
		if err != nil || under(src, p.WorkDir) {
			continue
		}
		rel, _ := filepath.Rel(p.Home, src)
		if strings.HasPrefix(rel, "..") {
			rel = strings.Trim(strings.ReplaceAll(src, "/", "_"), "_")
		}
		dst := filepath.Join(p.StateDir, "home", rel)
		if _, err := os.Lstat(dst); err != nil {
			if err := copyTree(src, dst, fi); err != nil {
				return nil, err
			}
		}
		ms = append(ms, mount{"--bind", dst, src})
	}
	return ms, nil
}

// copyTree copies src to dst: directories, regular files up to maxCopy,
// symbolic links as links; what skipCopy names is left out.
func copyTree(src, dst string, fi fs.FileInfo) error {
	if !fi.IsDir() {
		if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
			return err
		}
		return copyFile(src, dst, fi.Mode())
	}
	tmp := dst + ".copying"
	_ = os.RemoveAll(tmp)
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable: left out
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() && skipCopy[d.Name()] && rel != "." {
			if err := os.MkdirAll(filepath.Join(tmp, rel), 0o700); err != nil {
				return err
			}
			return fs.SkipDir
		}
		target := filepath.Join(tmp, rel)
		info, err := d.Info()
		if err != nil {
			return nil
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(target, info.Mode().Perm()|0o700)
		case info.Mode()&fs.ModeSymlink != 0:
			link, err := os.Readlink(path)
			if err == nil {
				_ = os.Symlink(link, target)
			}
			return nil
		case info.Mode().IsRegular() && info.Size() <= maxCopy:
			return copyFile(path, target, info.Mode())
		}
		return nil
	})
	if err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}

func copyFile(src, dst string, mode fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return nil // unreadable: left out
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode.Perm()|0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
