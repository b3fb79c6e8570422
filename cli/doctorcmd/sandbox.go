package doctorcmd

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/vibeteam/vibeteam/core/sandbox"
	"github.com/vibeteam/vibeteam/core/sandbox/egress"
)

// printSandboxDoctor reports the sandbox: bwrap and its version, whether
// it can make its namespaces (user namespaces, unless root), whether its
// processes share the session's network namespace, and a trial run of a
// command in a sandbox as runs make them.
func printSandboxDoctor(w io.Writer, timeout time.Duration) {
	fmt.Fprintln(w)
	line := func(mark, label, format string, args ...any) {
		fmt.Fprintf(w, "  %s %-8s %s\n", mark, label, fmt.Sprintf(format, args...))
	}
	if runtime.GOOS != "linux" {
		fmt.Fprintf(w, "%s sandbox\n", markWarn)
		line(markWarn, "bwrap", "the sandbox is Linux-only for now: runs on %s are unsandboxed (--sandbox exits 2)", runtime.GOOS)
		return
	}
	bwrap, err := sandbox.Find()
	if err != nil {
		fmt.Fprintf(w, "%s sandbox\n", markBad)
		line(markBad, "bwrap", "not installed: bead runs and --auto-approve run unsandboxed; %s", sandbox.InstallHint)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	version, _ := exec.CommandContext(ctx, bwrap, "--version").Output()
	userns, usernsOK := usernsState()
	start := time.Now()
	trial := exec.CommandContext(ctx, bwrap, "--die-with-parent", "--unshare-pid", "--unshare-net", "--cap-drop", "ALL", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--", "sh", "-c", "touch /tmp/t && ! touch /etc/vibeteam-doctor 2>/dev/null")
	out, trialErr := trial.CombinedOutput()
	took := time.Since(start)
	mark := markOK
	if trialErr != nil {
		mark = markBad
	} else if !usernsOK {
		mark = markWarn
	}
	fmt.Fprintf(w, "%s sandbox\n", mark)
	line(markOK, "bwrap", "%s (%s)", bwrap, strings.TrimSpace(string(version)))
	if usernsOK {
		line(markOK, "userns", "%s", userns)
	} else {
		line(markWarn, "userns", "%s", userns)
	}
	line(markOK, "network", "%s", netnsState())
	if trialErr != nil {
		line(markBad, "trial", "a sandboxed command failed (%v): %s", trialErr, strings.TrimSpace(string(out)))
		return
	}
	line(markOK, "trial", "a sandboxed command ran in %s: /tmp writable, /etc read-only, no network", took.Round(time.Millisecond))
}

// netnsState says how a session's sandboxed processes reach its egress
// proxy: all in one network namespace of the session's, where the proxy
// listens (as root), or each in its own with this binary started inside
// as its bridge (a slower start).
func netnsState() string {
	proxy, err := egress.New(egress.Config{Mode: egress.ModeNone})
	if err == nil {
		defer proxy.Close()
		_, err = proxy.ListenNetns(egress.DefaultBridgeListen, egress.ModeNone, nil)
	}
	if err != nil {
		return fmt.Sprintf("no shared network namespace (%v): each sandboxed process starts this binary inside as its bridge to the proxy, a slower start", err)
	}
	return "a shared network namespace per session: the proxy listens inside it, and sandboxed processes start in it with no bridge of their own"
}

// usernsState says whether bwrap can make its namespaces: root can; a
// user needs unprivileged user namespaces.
func usernsState() (string, bool) {
	if os.Geteuid() == 0 {
		return "running as root: no user namespace needed", true
	}
	if b, err := os.ReadFile("/proc/sys/kernel/unprivileged_userns_clone"); err == nil && strings.TrimSpace(string(b)) == "0" {
		return "unprivileged user namespaces are off (sysctl kernel.unprivileged_userns_clone=0): bwrap cannot sandbox as this user", false
	}
	if b, err := os.ReadFile("/proc/sys/user/max_user_namespaces"); err == nil && strings.TrimSpace(string(b)) == "0" {
		return "user namespaces are off (sysctl user.max_user_namespaces=0)", false
	}
	return "unprivileged user namespaces usable", true
}
