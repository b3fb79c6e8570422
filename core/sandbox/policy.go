package sandbox

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
)

// Secrets are the user's paths (under the home) that a sandbox never
// shows, whatever its configuration.
var Secrets = []string{".ssh", ".aws", ".gnupg", ".config/gh", ".netrc", ".docker", ".kube"}

// startupFiles are shell start-up files: read-only wherever they are in a
// writable directory, so that nothing planted there runs in the user's
// next shell.
var startupFiles = []string{".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc", ".zshenv", ".zprofile", ".zlogin", ".envrc"}

// tmpRoot is the directory a sandbox gets a private, empty copy of.
const tmpRoot = "/tmp"

// privateRoots are the directories a sandbox gets private, empty copies
// of: /tmp, and where the host's daemons keep their sockets (/run, and
// /var/run where it is not a link to it). A socket is reached through a
// read-only mount as well as a writable one, and behind those are the
// container daemon (root on the host), systemd and D-Bus, the user's
// ssh-agent and gpg-agent.
var privateRoots = sync.OnceValue(func() []string {
	roots := []string{tmpRoot, "/run"}
	if fi, err := os.Lstat("/var/run"); err == nil && fi.IsDir() {
		roots = append(roots, "/var/run")
	}
	return roots
})

// underPrivate reports whether path is inside one of privateRoots.
func underPrivate(path string) bool {
	return slices.ContainsFunc(privateRoots(), func(root string) bool {
		return under(path, root) && filepath.Clean(path) != root
	})
}

// privateMounts are the private roots' empty copies, then, read-only, the
// directory of the resolver's configuration where /etc/resolv.conf links
// into one of them (systemd-resolved's stub), so that names still resolve.
func privateMounts() []string {
	var args []string
	for _, root := range privateRoots() {
		args = append(args, "--tmpfs", root)
	}
	if target, err := filepath.EvalSymlinks("/etc/resolv.conf"); err == nil && underPrivate(target) {
		dir := filepath.Dir(target)
		args = append(args, "--ro-bind", dir, dir)
	}
	return args
}

// ErrNoBwrap is what Find returns where bubblewrap is not installed.
var ErrNoBwrap = errors.New("bubblewrap (bwrap) is not installed")

// InstallHint says how to install bubblewrap.
const InstallHint = "install it: apt-get install bubblewrap (Debian, Ubuntu), dnf install bubblewrap (Fedora, RHEL), pacman -S bubblewrap (Arch); or run with --no-sandbox"

// Find is the path of the bwrap program on PATH.
func Find() (string, error) {
	if runtime.GOOS != "linux" {
		// bubblewrap is Linux's; a bwrap elsewhere would not sandbox.
		return "", fmt.Errorf("%w: the sandbox is Linux-only (bubblewrap); on %s run with --no-sandbox", ErrNoBwrap, runtime.GOOS)
	}
	path, err := exec.LookPath("bwrap")
	if err != nil {
		return "", fmt.Errorf("%w: %s", ErrNoBwrap, InstallHint)
	}
	return path, nil
}

// Policy is the sandbox of one session: what is the same for every process
// it starts. Plan makes the sandbox of one process from it.
type Policy struct {
	Bwrap   string // the bwrap program
	BaseDir string // the user's checkout, which holds .vibeteam/
	// WorkDir is writable: the bead's worktree, or BaseDir for a plain
	// workflow.
	WorkDir string
	Home    string // the user's home ("" where there is none)
	// StateDir is the session's own directory for what agents write to
	// their state and for private caches (<base>/.vibeteam/sandbox/<id>).
	StateDir string
	Config   Config
	// Egress, when set, is the proxy a sandbox with network allow reaches
	// out through; nil: network allow is no network until there is one.
	Egress *Egress

	once   sync.Once
	shared []mount // the mounts every plan of the session has (prepare)
	err    error
}

// Egress is how a sandbox reaches the network through vibeteam's proxy
// (core/sandbox/egress): a unix socket bound into it, and what is set in
// the environment inside.
type Egress struct {
	Socket string            // the proxy's socket on the host; bound at the same path
	Env    map[string]string // every process's: HTTPS_PROXY and the rest
	// AdapterEnv is an agent's own, over Env: its key's placeholder and
	// its base URL at the proxy.
	AdapterEnv func(adapter string) map[string]string
	// AdapterArgs go first on an agent's command line: what it reads from
	// no variable (codex's base URL: -c openai_base_url=…).
	AdapterArgs func(adapter string) []string
	// Wrap, when set, is the argv put before the command inside (the
	// in-sandbox bridge from a loopback port to Socket).
	Wrap []string
	// SocketFor, when set, is a socket of the same proxy whose policy is
	// network and allow (a step's own, over the session's), and WrapFor
	// the bridge to it.
	SocketFor func(network string, allow []string) (string, error)
	WrapFor   func(socket string) []string
	// Enter, when set, is a network namespace of the session's where the
	// proxy listens with the policy network and allow: every process of
	// that policy starts in it (Plan.Start), and none starts a bridge.
	// nil, nil: there is none here (not root), and each process gets a
	// namespace and a bridge of its own.
	Enter func(network string, allow []string) (*os.File, error)
}

// mount is one bwrap mount option: op ("--bind", "--ro-bind", "--tmpfs",
// "--ro-bind-try"), src (none for tmpfs), dst.
type mount struct{ op, src, dst string }

func (m mount) args() []string {
	if m.op == "--tmpfs" {
		return []string{m.op, m.dst}
	}
	return []string{m.op, m.src, m.dst}
}

// Plan is the sandbox of one process: what core/runner puts before its
// command, and the environment it keeps.
type Plan struct {
	Bwrap string
	// Args are bwrap's options up to its private /tmp, Mounts the mounts
	// after it: what Wrap shows of /tmp goes in between.
	Args   []string
	Mounts []string
	// Keep are the names of the environment kept (a name ending in * keeps
	// every name it starts), Set what is set inside on top of it.
	Keep []string
	Set  map[string]string
	// Before is put before the command inside (the egress bridge).
	Before []string
	// Netns is the session's network namespace the process starts in
	// (Start); nil: its own (--unshare-net), or the host's (network all).
	Netns *os.File
	// Writable are the paths writes may go to, for a refusal's message.
	Writable []string
	// AgentArgs go first on the agent's command line, before its own.
	AgentArgs []string
}

// baseEnv are the variables every sandboxed process keeps: what a program
// needs to run (PATH, HOME, LANG, TERM) and to build (the toolchains'
// cache locations), vibeteam's own, and a git identity. AWS_*,
// GITHUB_TOKEN, SSH_AUTH_SOCK and everything else are dropped.
var baseEnv = []string{
	"PATH", "HOME", "LANG", "LANGUAGE", "LC_*", "TERM", "COLORTERM", "NO_COLOR", "FORCE_COLOR", "TZ", "USER", "LOGNAME", "SHELL", "PWD", "CI",
	"VIBETEAM_*", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_RUNTIME_DIR",
	"GOCACHE", "GOMODCACHE", "GOPATH", "GOFLAGS", "GOPROXY", "GONOSUMDB", "GOPRIVATE", "GONOPROXY", "GOTOOLCHAIN", "GOROOT",
	"CARGO_HOME", "RUSTUP_HOME", "npm_config_cache", "NPM_CONFIG_CACHE", "PIP_CACHE_DIR",
	"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "IS_SANDBOX",
}

// In is the policy with dir as the working directory instead (a merge
// gate's temporary worktree).
func (p *Policy) In(dir string) *Policy {
	return &Policy{Bwrap: p.Bwrap, BaseDir: p.BaseDir, WorkDir: dir, Home: p.Home, StateDir: p.StateDir, Config: p.Config, Egress: p.Egress}
}

// Plan is the sandbox of a process started in dir, keeping the variables
// named in keep (its adapter's auth.env) besides the defaults, with step's
// settings over the policy's.
func (p *Policy) Plan(dir string, keep []string, step Config) (*Plan, error) {
	return p.PlanFor("", dir, keep, step)
}

// PlanFor is Plan for a process of adapter's ("" for a script or a gate):
// behind the egress proxy, it gets the adapter's placeholder key and base
// URL.
func (p *Policy) PlanFor(adapter, dir string, keep []string, step Config) (*Plan, error) {
	p.once.Do(p.prepare)
	if p.err != nil {
		return nil, p.err
	}
	cfg := p.Config.Merge(step)
	if dir == "" {
		dir = p.WorkDir
	}
	ms := slices.Clone(p.shared)
	writable := []string{p.WorkDir}
	for _, w := range cfg.Write[len(p.Config.Write):] {
		path := p.abs(w)
		_ = os.MkdirAll(path, 0o755)
		ms = append(ms, mount{"--bind", path, path})
		writable = append(writable, path)
	}
	for _, w := range p.Config.Write {
		writable = append(writable, p.abs(w))
	}
	// What must stay read-only inside a writable directory, then what is
	// not to be seen at all: last, so that nothing bound before wins.
	ms = append(ms, p.guards(writable)...)
	for _, h := range cfg.Hide {
		ms = append(ms, hide(p.abs(h))...)
	}
	for _, s := range Secrets {
		if p.Home != "" {
			ms = append(ms, hide(filepath.Join(p.Home, s))...)
		}
	}
	var mounts []string
	for _, m := range ms {
		mounts = append(mounts, m.args()...)
	}
	plan := &Plan{Bwrap: p.Bwrap, Keep: append(append(slices.Clone(baseEnv), keep...), cfg.Env...), Writable: writable}
	// A process whose network is not all gets a network namespace: the
	// session's for its policy, or one of its own.
	ownNetns := cfg.NetworkOf() != NetworkAll
	if e := p.Egress; e != nil && cfg.NetworkOf() != NetworkAll {
		enter, err := e.enter(cfg)
		if err != nil {
			return nil, err
		}
		if enter != nil {
			plan.Netns, ownNetns = enter, false
		} else {
			socket, before, err := e.socketOf(p.Config, cfg)
			if err != nil {
				return nil, err
			}
			mounts = append(mounts, "--bind", socket, socket)
			plan.Before = before
		}
		plan.Set = map[string]string{}
		maps.Copy(plan.Set, e.Env)
		if adapter != "" && e.AdapterEnv != nil {
			maps.Copy(plan.Set, e.AdapterEnv(adapter))
		}
		if adapter != "" && e.AdapterArgs != nil {
			plan.AgentArgs = e.AdapterArgs(adapter)
		}
	}
	plan.Args = []string{"--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"}
	if ownNetns {
		plan.Args = append(plan.Args, "--unshare-net")
	}
	plan.Args = append(plan.Args, capabilities(os.Geteuid() == 0)...)
	plan.Args = append(plan.Args, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc")
	plan.Args = append(plan.Args, procReadOnly()...)
	plan.Args = append(plan.Args, privateMounts()...)
	plan.Mounts = append(mounts, "--chdir", dir)
	return plan, nil
}

// rootKeeps are the capabilities a process run by root keeps inside: what
// a build or a test suite run as root uses (files of another owner, a
// dropped privilege, a low port). Not the ones that undo the sandbox:
// CAP_SYS_ADMIN unmounts a read-only bind (.git/hooks) and remounts the
// checkout writable, CAP_MKNOD makes the disk's device node,
// CAP_DAC_READ_SEARCH opens a file by handle past every mount,
// CAP_SYS_PTRACE, CAP_NET_ADMIN, CAP_SETFCAP (a file capability the host
// honours later) and the rest.
var rootKeeps = []string{"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL", "CAP_SETGID", "CAP_SETUID", "CAP_NET_BIND_SERVICE"}

// capabilities are bwrap's options for what a process keeps: bwrap run by
// root keeps every capability unless told (it drops them all for anyone
// else), so a root's sandbox drops them and adds back rootKeeps.
func capabilities(root bool) []string {
	args := []string{"--cap-drop", "ALL"}
	if root {
		for _, c := range rootKeeps {
			args = append(args, "--cap-add", c)
		}
	}
	return args
}

// procKernel are the files of a sandbox's /proc that reach the host's
// kernel, not the sandbox's processes: the sysctls (root writes them with
// no capability at all: kernel.core_pattern set to a program of the
// worktree's runs it on the host, as root, at the next crash), the SysRq
// trigger, and the file system and device tables.
var procKernel = []string{"/proc/sys", "/proc/sysrq-trigger", "/proc/fs", "/proc/irq", "/proc/bus", "/proc/acpi", "/proc/scsi"}

// procReadOnly are bwrap's options that cover procKernel with a read-only
// view of the host's (bwrap run by root leaves /proc/sys writable).
func procReadOnly() []string {
	var args []string
	for _, p := range procKernel {
		args = append(args, "--ro-bind-try", p, p)
	}
	return args
}

// enter is how a process whose settings are cfg joins the session's
// network namespace of its policy; nil where there is none.
func (e *Egress) enter(cfg Config) (*os.File, error) {
	if e.Enter == nil {
		return nil, nil
	}
	return e.Enter(cfg.NetworkOf(), cfg.Allow)
}

// socketOf is the proxy socket a process whose settings are cfg reaches
// out through, and the bridge to it: the session's, unless cfg (a step's
// settings over the session's) changes the network or adds hosts.
func (e *Egress) socketOf(session, cfg Config) (string, []string, error) {
	if e.SocketFor == nil || e.WrapFor == nil || cfg.NetworkOf() == session.NetworkOf() && len(cfg.Allow) == len(session.Allow) {
		return e.Socket, e.Wrap, nil
	}
	socket, err := e.SocketFor(cfg.NetworkOf(), cfg.Allow)
	if err != nil {
		return "", nil, err
	}
	return socket, e.WrapFor(socket), nil
}

// Abs is a write: or hide: entry as the sandbox reads it: ~ expanded,
// relative to the working directory.
func (p *Policy) Abs(path string) string { return p.abs(path) }

// abs is path with ~ expanded, relative to the working directory.
func (p *Policy) abs(path string) string {
	if rest, ok := strings.CutPrefix(path, "~/"); ok && p.Home != "" {
		return filepath.Join(p.Home, rest)
	}
	if path == "~" && p.Home != "" {
		return p.Home
	}
	if !filepath.IsAbs(path) {
		return filepath.Join(p.WorkDir, path)
	}
	return filepath.Clean(path)
}

// hide is what makes path invisible: an empty directory over a directory,
// an empty file over a file; nothing for what is not there.
func hide(path string) []mount {
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return nil
	case fi.IsDir():
		return []mount{{"--tmpfs", "", path}}
	default:
		return []mount{{"--ro-bind", os.DevNull, path}}
	}
}

// prepare computes the mounts every process of the session gets: the
// user's home (when it is under /tmp, which is replaced), the working
// directory and its git plumbing, the caches, the agents' state.
func (p *Policy) prepare() {
	if p.WorkDir == "" {
		p.WorkDir = p.BaseDir
	}
	var ms []mount
	if p.Home != "" && underPrivate(p.Home) {
		ms = append(ms, mount{"--ro-bind", p.Home, p.Home})
	}
	if underPrivate(p.BaseDir) && p.BaseDir != p.WorkDir {
		// The user's checkout, read-only, as it is anywhere else.
		ms = append(ms, mount{"--ro-bind", p.BaseDir, p.BaseDir})
	}
	ms = append(ms, mount{"--bind", p.WorkDir, p.WorkDir})
	ms = append(ms, gitMounts(p.WorkDir)...)
	caches, err := p.cacheMounts()
	if err != nil {
		p.err = err
		return
	}
	ms = append(ms, caches...)
	state, err := p.stateMounts()
	if err != nil {
		p.err = err
		return
	}
	p.shared = append(ms, state...)
	for _, w := range p.Config.Write {
		path := p.abs(w)
		_ = os.MkdirAll(path, 0o755)
		p.shared = append(p.shared, mount{"--bind", path, path})
	}
}

// guards are the read-only mounts inside the writable directories: the
// repository's hooks and config, the base directory's .vibeteam/, shell
// start-up files.
func (p *Policy) guards(writable []string) []mount {
	var ms []mount
	inWritable := func(path string) bool {
		return slices.ContainsFunc(writable, func(w string) bool { return under(path, w) })
	}
	for _, w := range writable {
		gitDir := filepath.Join(w, ".git")
		if fi, err := os.Stat(gitDir); err == nil && fi.IsDir() {
			hooks := filepath.Join(gitDir, "hooks")
			_ = os.MkdirAll(hooks, 0o755) // so that none can be made
			ms = append(ms, mount{"--ro-bind", hooks, hooks})
			ms = append(ms, roIfThere(filepath.Join(gitDir, "config"))...)
		}
		for _, f := range startupFiles {
			ms = append(ms, roIfThere(filepath.Join(w, f))...)
		}
	}
	if vt := filepath.Join(p.BaseDir, ".vibeteam"); inWritable(vt) {
		_ = os.MkdirAll(vt, 0o755)
		ms = append(ms, mount{"--ro-bind", vt, vt})
	}
	if p.Home != "" {
		for _, f := range startupFiles {
			if path := filepath.Join(p.Home, f); inWritable(path) {
				ms = append(ms, roIfThere(path)...)
			}
		}
	}
	return ms
}

func roIfThere(path string) []mount {
	if _, err := os.Lstat(path); err != nil {
		return nil
	}
	return []mount{{"--ro-bind", path, path}}
}

// gitMounts lets a linked worktree commit: its common git directory is
// outside it, read-only but for what a commit writes (objects, refs,
// logs, the worktree's own administrative directory); hooks and config
// stay read-only, and so do the files that say where the repository is.
func gitMounts(work string) []mount {
	dotGit := filepath.Join(work, ".git")
	b, err := os.ReadFile(dotGit)
	if err != nil {
		return nil // a directory (guards covers it), or no repository
	}
	admin, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:")
	if !ok {
		return nil
	}
	admin = strings.TrimSpace(admin)
	if !filepath.IsAbs(admin) {
		admin = filepath.Join(work, admin)
	}
	common := filepath.Join(admin, "..", "..")
	if c, err := os.ReadFile(filepath.Join(admin, "commondir")); err == nil {
		common = strings.TrimSpace(string(c))
		if !filepath.IsAbs(common) {
			common = filepath.Join(admin, common)
		}
	}
	common = filepath.Clean(common)
	ms := []mount{{"--ro-bind", dotGit, dotGit}, {"--ro-bind", common, common}}
	for _, d := range []string{"objects", "refs", "logs"} {
		if path := filepath.Join(common, d); isDir(path) {
			ms = append(ms, mount{"--bind", path, path})
		}
	}
	ms = append(ms, mount{"--bind", admin, admin})
	for _, f := range []string{"commondir", "gitdir", "config.worktree"} {
		ms = append(ms, roIfThere(filepath.Join(admin, f))...)
	}
	if hooks := filepath.Join(common, "hooks"); isDir(hooks) {
		ms = append(ms, mount{"--ro-bind", hooks, hooks})
	}
	return ms
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// under reports whether path is dir or inside it.
func under(path, dir string) bool {
	if path == "" || dir == "" {
		return false
	}
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}
