package core

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/vibeteam/vibeteam/core/events"
	"github.com/vibeteam/vibeteam/core/sandbox"
	"github.com/vibeteam/vibeteam/core/sandbox/egress"
	"github.com/vibeteam/vibeteam/core/state"
	"github.com/vibeteam/vibeteam/core/workflow"
)

// sandboxPolicy is the sandbox of sess (nil without one), cfg (the
// project's settings) with its workflow's sandbox: block over it: its
// processes may write its working directory (workDir: the bead's worktree,
// or the base directory), and what the agents write to their own state
// goes to the session's directory under .vibeteam/sandbox/. Unless its
// network is all, the session gets its egress proxy, which stop closes.
func sandboxPolicy(sess *state.Session, cfg *sandbox.Config, workDir string, emit func(Event)) (policy *sandbox.Policy, stop func(), err error) {
	sess.Sandbox = cfg
	stop = func() {}
	if cfg == nil {
		return nil, stop, nil
	}
	bwrap, err := sandbox.Find()
	if err != nil {
		return nil, stop, err
	}
	if workDir == "" {
		workDir = sess.BaseDir
	}
	home, _ := os.UserHomeDir()
	settings := *cfg
	if def := sess.WorkflowDefinition; def != nil && def.Sandbox != nil {
		settings = settings.Merge(*def.Sandbox)
	}
	policy = &sandbox.Policy{
		Bwrap: bwrap, BaseDir: sess.BaseDir, WorkDir: workDir, Home: home, Config: settings,
		StateDir: filepath.Join(sess.BaseDir, ".vibeteam", "sandbox", sess.ID),
	}
	if settings.NetworkOf() == sandbox.NetworkAll {
		return policy, stop, nil
	}
	e, stop, err := startEgress(sess, settings, emit)
	if err != nil {
		return nil, func() {}, err
	}
	policy.Egress = e
	return policy, stop, nil
}

// startEgress starts the session's egress proxy on a unix socket: the
// allowlist is sandbox.allow and the hosts of the adapters the workflow
// names (for an agent logged in without a key); the model routes hold
// the keys of the environment. A refused connection is a warning event.
func startEgress(sess *state.Session, cfg sandbox.Config, emit func(Event)) (*sandbox.Egress, func(), error) {
	self, err := os.Executable()
	if err != nil {
		return nil, nil, fmt.Errorf("the sandbox's network bridge is this program: %w", err)
	}
	inside := egress.InsideURL(egress.DefaultBridgeListen)
	allow := slices.Clone(cfg.Allow)
	var routes []egress.Route
	apis := map[string]egress.ModelAPI{}
	for _, name := range adaptersOf(sess.WorkflowDefinition) {
		api, ok := egress.ForAdapter(name, os.Environ(), inside)
		if !ok {
			continue
		}
		apis[name] = api
		routes = append(routes, api.Routes...)
		allow = append(allow, api.Hosts...)
	}
	rules, err := egress.ParseRules(allow)
	if err != nil {
		return nil, nil, fmt.Errorf("sandbox.allow: %w", err)
	}
	mode := egress.ModeAllowList
	if cfg.NetworkOf() == sandbox.NetworkNone {
		mode = egress.ModeNone
	}
	proxy, err := egress.New(egress.Config{Mode: mode, Allow: rules, Routes: dedupeRoutes(routes), OnRefused: func(r egress.Refusal) {
		if r.Reason == egress.ReasonLocalAddress {
			emit(Event{Time: time.Now(), Session: sess.ID, Payload: events.Warn{
				Warning: fmt.Sprintf("sandbox refused a connection to %s:%d: the name resolves only to local addresses; sandbox: {allow: [127.0.0.1:%d]} lets the address itself through", r.Host, r.Port, r.Port),
			}})
			return
		}
		emit(Event{Time: time.Now(), Session: sess.ID, Payload: events.Warn{
			Warning: fmt.Sprintf("sandbox refused a connection to %s:%d (%s); sandbox: {allow: [%s:%d]} lets it through", r.Host, r.Port, r.Reason, r.Host, r.Port),
		}})
	}})
	if err != nil {
		return nil, nil, err
	}
	// A short path: a unix socket's may not be longer than 107 bytes.
	dir, err := os.MkdirTemp("", "vt-egress-")
	if err != nil {
		return nil, nil, err
	}
	sock := filepath.Join(dir, "egress.sock")
	stop := func() {
		_ = proxy.Close()
		_ = os.RemoveAll(dir)
	}
	if err := proxy.ListenUnix(sock); err != nil {
		stop()
		return nil, nil, err
	}
	env := map[string]string{}
	for _, kv := range egress.ProxyEnv(inside) {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	wrap := func(socket string) []string {
		return append(egress.BridgeArgv(self, egress.BridgeOptions{Listen: egress.DefaultBridgeListen, Socket: socket}), "--")
	}
	return &sandbox.Egress{
		Socket: sock, Env: env, WrapFor: wrap,
		SocketFor: stepSockets(proxy, dir, api(apis)),
		AdapterEnv: func(adapter string) map[string]string {
			out := map[string]string{}
			for _, kv := range apis[adapter].Env {
				k, v, _ := strings.Cut(kv, "=")
				out[k] = v
			}
			return out
		},
		AdapterArgs: func(adapter string) []string { return slices.Clone(apis[adapter].Args) },
		Wrap:        wrap(sock),
		Enter:       policyNamespaces(proxy, api(apis)),
	}, stop, nil
}

// policyNamespaces makes, once per distinct setting, a network namespace
// where proxy listens with that network and allow: (and the adapters'
// hosts), which every process of that setting joins. Once one cannot be
// made (vibeteam is not root), it answers nil: each process then gets a
// namespace of its own and starts the bridge there.
func policyNamespaces(proxy *egress.Proxy, adapterHosts []string) func(network string, allow []string) (*os.File, error) {
	var mu sync.Mutex
	made := map[string]*os.File{}
	unavailable := false
	return func(network string, allow []string) (*os.File, error) {
		key := network + "\x00" + strings.Join(allow, "\x00")
		mu.Lock()
		defer mu.Unlock()
		if enter, ok := made[key]; ok || unavailable {
			return enter, nil
		}
		rules, err := egress.ParseRules(append(slices.Clone(allow), adapterHosts...))
		if err != nil {
			return nil, fmt.Errorf("sandbox.allow: %w", err)
		}
		mode := egress.ModeAllowList
		if network == sandbox.NetworkNone {
			mode = egress.ModeNone
		}
		enter, err := proxy.ListenNetns(egress.DefaultBridgeListen, mode, rules)
		if errors.Is(err, egress.ErrNoNetns) {
			unavailable = true
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		made[key] = enter
		return enter, nil
	}
}

// api are the hosts of the adapters' model APIs, which every socket's
// allowlist has (for an agent logged in without a key).
func api(apis map[string]egress.ModelAPI) []string {
	var hosts []string
	for _, name := range slices.Sorted(maps.Keys(apis)) {
		hosts = append(hosts, apis[name].Hosts...)
	}
	return hosts
}

// stepSockets makes, once per distinct setting, a socket of proxy in dir
// whose policy is a step's own network and allow: (with the adapters'
// hosts): what a step's sandbox: block asks is what its process gets.
func stepSockets(proxy *egress.Proxy, dir string, adapterHosts []string) func(network string, allow []string) (string, error) {
	var mu sync.Mutex
	made := map[string]string{}
	return func(network string, allow []string) (string, error) {
		key := network + "\x00" + strings.Join(allow, "\x00")
		mu.Lock()
		defer mu.Unlock()
		if sock, ok := made[key]; ok {
			return sock, nil
		}
		rules, err := egress.ParseRules(append(slices.Clone(allow), adapterHosts...))
		if err != nil {
			return "", fmt.Errorf("sandbox.allow: %w", err)
		}
		mode := egress.ModeAllowList
		if network == sandbox.NetworkNone {
			mode = egress.ModeNone
		}
		sock := filepath.Join(dir, fmt.Sprintf("egress-%d.sock", len(made)+1))
		if err := proxy.ListenUnixWith(sock, mode, rules); err != nil {
			return "", err
		}
		made[key] = sock
		return sock, nil
	}
}

// adaptersOf are the adapters a definition's agents use.
func adaptersOf(def *workflow.Definition) []string {
	seen := map[string]bool{}
	if def != nil {
		for s := range def.AllSteps() {
			if s.Agent != nil {
				seen[s.Agent.Adapter] = true
			}
			for _, t := range s.Tasks {
				seen[t.Adapter] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// dedupeRoutes keeps the first route of each name (two adapters of the
// same vendor, e.g. claude and opencode's anthropic, have distinct names).
func dedupeRoutes(routes []egress.Route) []egress.Route {
	seen := map[string]bool{}
	var out []egress.Route
	for _, r := range routes {
		if !seen[r.Name] {
			seen[r.Name] = true
			out = append(out, r)
		}
	}
	return out
}

// SandboxHosts are what a session's proxy lets through for def besides
// sandbox.allow: the model APIs of the adapters its agents use (for an
// agent logged in without a key), and the keys the proxy holds for them
// (the variables of the environment env whose values stay outside).
func SandboxHosts(def *workflow.Definition, env []string) (hosts, keys []string) {
	inside := egress.InsideURL(egress.DefaultBridgeListen)
	for _, name := range adaptersOf(def) {
		api, ok := egress.ForAdapter(name, env, inside)
		if !ok {
			continue
		}
		for _, h := range api.Hosts {
			if !slices.Contains(hosts, h) {
				hosts = append(hosts, h)
			}
		}
		for _, k := range api.Keys {
			if !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	return hosts, keys
}
