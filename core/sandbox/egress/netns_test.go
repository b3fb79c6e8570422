package egress

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/vibeteam/vibeteam/core/sandbox"
)

// The session's network namespace (ListenNetns), joined by two sandboxes
// one after the other with no bridge of their own: each reaches an
// allowed host and the model route (the real key added outside), a host
// that is not allowed is refused, the host's loopback (the allowed
// server's own port, directly) is not there, and both are in the one
// namespace, which is not the host's.
func TestNamespaceInsideBubblewrap(t *testing.T) {
	bwrap := needBwrap(t)
	allowed, other, model := newUpstream(t, false), newUpstream(t, false), newUpstream(t, false)
	allowedHP, _ := allowed.hostPort(t)
	hostEnv := []string{"ANTHROPIC_API_KEY=sk-ant-REAL", "ANTHROPIC_BASE_URL=" + model.URL}
	pre, _ := ForAdapter("claude", hostEnv, "http://unused")
	hostNS, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	ref := make(refusals, 16)
	p, err := New(Config{Mode: ModeNone, Routes: pre.Routes, OnRefused: ref.on})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	ns, err := p.ListenNetns(DefaultBridgeListen, ModeAllowList, rules(t, allowedHP))
	if errors.Is(err, ErrNoNetns) {
		t.Skipf("no network namespace of the session's here (each process bridges): %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	inside := InsideURL(DefaultBridgeListen)
	api, _ := ForAdapter("claude", hostEnv, inside)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var namespaces []string
	for range 2 {
		argv := append([]string{}, bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
			"--unshare-pid", "--die-with-parent", "--", "/bin/sh", "-c", `readlink /proc/self/ns/net; exec "$@"`, "sh",
			"/usr/bin/env", "EGRESS_TEST_MODE=client", self,
			"proxy="+allowed.URL+"/in", "proxy="+other.URL+"/out", "direct="+allowed.URL+"/direct", "route")
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = append(append([]string{"PATH=" + os.Getenv("PATH")}, ProxyEnv(inside)...), api.Env...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		// Started in the session's namespace, as core/runner starts a
		// sandboxed process.
		err := (&sandbox.Plan{Netns: ns}).Start(cmd.Start)
		if err == nil {
			err = cmd.Wait()
		}
		if err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out.String())
		}
		inside, rest, _ := strings.Cut(strings.TrimSpace(out.String()), "\n")
		namespaces = append(namespaces, inside)
		want := []string{
			"proxy 200 hello from /in",
			"proxy 403 vibeteam sandbox: host " + strings.TrimPrefix(other.URL, "http://") + " is not allowed; add it under sandbox.allow",
			"direct error",
			"route 200 hello from /v1/messages",
			"key " + Placeholder,
		}
		if rest != strings.Join(want, "\n") {
			t.Errorf("inside the sandbox:\n%s\nwant:\n%s", rest, strings.Join(want, "\n"))
		}
		ref.next(t)
	}
	if namespaces[0] != namespaces[1] || namespaces[0] == hostNS || !strings.HasPrefix(namespaces[0], "net:[") {
		t.Errorf("network namespaces: %q then %q (the host's %q): want one of the session's, shared", namespaces[0], namespaces[1], hostNS)
	}
	if after, _ := os.Readlink("/proc/self/ns/net"); after != hostNS {
		t.Errorf("this process is in %q after ListenNetns, was in %q", after, hostNS)
	}
	if k := model.last(t).Header.Get("x-api-key"); k != "sk-ant-REAL" {
		t.Errorf("the model server got key %q", k)
	}
	if other.hits() != 0 || allowed.hits() != 2 {
		t.Errorf("hits: other %d, allowed %d", other.hits(), allowed.hits())
	}
}
