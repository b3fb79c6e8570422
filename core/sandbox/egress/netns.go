package egress

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
)

// ErrNoNetns says that this vibeteam cannot make a network namespace of
// its own (not root, no CAP_SYS_ADMIN, not Linux) or that nsenter is not
// there to join one: each sandboxed process then gets its own namespace
// and starts the bridge inside.
var ErrNoNetns = errors.New("no shared network namespace")

// ListenNetns makes a network namespace with nothing but a loopback
// interface, listens inside it on addr (DefaultBridgeListen) and serves
// there with mode and allow, as ListenUnixWith does on a socket. It
// returns the argv that runs a program inside that namespace (nsenter
// --net=PATH --): every sandboxed process of a policy joins the one
// namespace, where the proxy already listens, instead of starting a
// bridge of its own (the whole vibeteam binary, tens of milliseconds per
// process). The namespace lives as long as the proxy.
func (p *Proxy) ListenNetns(addr string, mode Mode, allow []Rule) ([]string, error) {
	if mode == "" {
		mode = ModeAllowList
	}
	if _, err := ParseMode(string(mode)); err != nil {
		return nil, err
	}
	nsenter, err := exec.LookPath("nsenter")
	if err != nil {
		return nil, fmt.Errorf("%w: nsenter (util-linux) is not installed", ErrNoNetns)
	}
	l, ns, err := listenInNewNetns(addr)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.namespaces = append(p.namespaces, ns)
	p.mu.Unlock()
	if err := p.Serve(policyListener{Listener: l, pol: &policy{mode: mode, rules: allow}}); err != nil {
		return nil, err
	}
	// The namespace is held by the open file: a path through this
	// process's descriptor table joins it.
	path := fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), ns.Fd())
	return []string{nsenter, "--net=" + path, "--"}, nil
}
