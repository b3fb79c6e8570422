package egress

import (
	"errors"
	"os"
)

// ErrNoNetns says that this vibeteam cannot make a network namespace of
// its own (not root, no CAP_SYS_ADMIN, not Linux): each sandboxed process
// then gets its own namespace and starts the bridge inside.
var ErrNoNetns = errors.New("no shared network namespace")

// ListenNetns makes a network namespace with nothing but a loopback
// interface, listens inside it on addr (DefaultBridgeListen) and serves
// there with mode and allow, as ListenUnixWith does on a socket. It
// returns the namespace: every sandboxed process of a policy is started
// in it (sandbox.Plan.Start), where the proxy already listens, instead of
// starting a bridge of its own (the whole vibeteam binary, tens of
// milliseconds per process). The namespace is the proxy's: it lives, and
// the file stays open, until Close.
func (p *Proxy) ListenNetns(addr string, mode Mode, allow []Rule) (*os.File, error) {
	if mode == "" {
		mode = ModeAllowList
	}
	if _, err := ParseMode(string(mode)); err != nil {
		return nil, err
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
	return ns, nil
}
