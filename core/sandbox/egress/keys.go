package egress

import (
	"net"
	"net/url"
	"strings"
)

// Placeholder is the API key an agent holds inside the sandbox. It is no
// secret: the proxy replaces it with the real key on the way out.
const Placeholder = "vibeteam-sandbox-placeholder-key"

// ModelAPI is what ForAdapter makes of an adapter and the host's
// environment.
type ModelAPI struct {
	// Env is set inside the sandbox, over whatever else is passed in:
	// the placeholder in each key variable, the base URLs at the bridge.
	Env []string
	// Routes go to Config.Routes: they hold the real keys.
	Routes []Route
	// Args go on the agent's command line, for what it reads from no
	// variable: codex (0.171) takes its base URL only from its config
	// (-c openai_base_url=…), not from OPENAI_BASE_URL.
	Args []string
	// Keys names the host variables whose values only the proxy holds;
	// Env overrides each of them.
	Keys []string
	// Hosts are the "host:port" of the vendor API and of a base URL the
	// user set: what the agent reaches by itself when it has no key in
	// the environment (an OAuth login), to add to the allowlist then.
	Hosts []string
}

// keySpec is one model API an adapter talks to.
type keySpec struct {
	route    string   // route name
	keys     []string // variables holding the key, the first set wins
	alsoKeys []string // other variables to replace by the placeholder
	header   string
	scheme   string
	query    string
	baseEnv  string // the variable naming the base URL
	base     string // the vendor's base URL
	// version is a path suffix moved from the upstream to the inside base
	// URL ("/v1"), for SDKs that append it themselves to a base URL that
	// lacks it (the AI SDK's anthropic provider, in newer versions).
	version string
	// config is the agent's config key for the base URL, given as
	// `-c KEY="URL"` (codex).
	config string
}

var claudeKeys = []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"}

var adapterKeys = map[string][]keySpec{
	// Claude Code: x-api-key (ANTHROPIC_API_KEY), else a bearer token
	// (ANTHROPIC_AUTH_TOKEN for a gateway, CLAUDE_CODE_OAUTH_TOKEN from
	// `claude setup-token`); the base URL has no /v1. Whichever is used,
	// every one that is set holds the placeholder inside.
	"claude": {
		{route: "claude", keys: []string{"ANTHROPIC_API_KEY"}, alsoKeys: claudeKeys, header: "x-api-key", baseEnv: "ANTHROPIC_BASE_URL", base: "https://api.anthropic.com"},
		{route: "claude", keys: []string{"ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"}, alsoKeys: claudeKeys, header: "Authorization", scheme: "Bearer ", baseEnv: "ANTHROPIC_BASE_URL", base: "https://api.anthropic.com"},
	},
	// Codex's built-in openai provider: the base URL (with /v1) from the
	// user's OPENAI_BASE_URL, given to codex as -c openai_base_url (it
	// reads no variable for it); exec also takes CODEX_API_KEY.
	"codex": {
		{route: "codex", keys: []string{"OPENAI_API_KEY", "CODEX_API_KEY"}, alsoKeys: []string{"OPENAI_API_KEY", "CODEX_API_KEY"}, header: "Authorization", scheme: "Bearer ", baseEnv: "OPENAI_BASE_URL", base: "https://api.openai.com/v1", config: "openai_base_url"},
	},
	// Gemini CLI (@google/genai): x-goog-api-key; an older client's ?key=
	// is replaced too.
	"gemini": {
		{route: "gemini", keys: []string{"GEMINI_API_KEY", "GOOGLE_API_KEY"}, alsoKeys: []string{"GEMINI_API_KEY", "GOOGLE_API_KEY"}, header: "x-goog-api-key", query: "key", baseEnv: "GOOGLE_GEMINI_BASE_URL", base: "https://generativelanguage.googleapis.com"},
	},
	// opencode's providers are the AI SDK's, whose base URLs include /v1.
	"opencode": {
		{route: "opencode-anthropic", keys: []string{"ANTHROPIC_API_KEY"}, header: "x-api-key", baseEnv: "ANTHROPIC_BASE_URL", base: "https://api.anthropic.com/v1", version: "/v1"},
		{route: "opencode-openai", keys: []string{"OPENAI_API_KEY"}, header: "Authorization", scheme: "Bearer ", baseEnv: "OPENAI_BASE_URL", base: "https://api.openai.com/v1"},
	},
}

// Adapters are the adapters ForAdapter knows.
func Adapters() []string { return []string{"claude", "codex", "gemini", "opencode"} }

// ForAdapter is the model API of a built-in adapter (claude, codex,
// gemini, opencode) given the host's environment (os.Environ()) and the
// proxy's URL as seen inside the sandbox (InsideURL). For each API whose
// key hostEnv holds, the agent gets Placeholder in the key variable and a
// base URL at the proxy's route, and the route sends the real key to the
// user's base URL if set (a gateway, or a fake server in tests), else to
// the vendor. ok is false for any other adapter.
func ForAdapter(adapter string, hostEnv []string, insideURL string) (api ModelAPI, ok bool) {
	specs, ok := adapterKeys[adapter]
	if !ok {
		return ModelAPI{}, false
	}
	env := envMap(hostEnv)
	insideURL = strings.TrimSuffix(insideURL, "/")
	routed := map[string]bool{} // a base URL variable is pointed once
	for _, s := range specs {
		base := s.base
		if v := env[s.baseEnv]; v != "" {
			base = v
		}
		api.Hosts = appendHost(api.Hosts, s.base)
		api.Hosts = appendHost(api.Hosts, base)
		name, key := firstSet(env, s.keys)
		if key == "" || routed[s.baseEnv] {
			continue
		}
		routed[s.baseEnv] = true
		base = strings.TrimSuffix(base, "/")
		upstream, suffix := base, ""
		if s.version != "" && strings.HasSuffix(base, s.version) {
			upstream, suffix = strings.TrimSuffix(base, s.version), s.version
		}
		api.Routes = append(api.Routes, Route{
			Name: s.route, Upstream: upstream, Header: s.header, Scheme: s.scheme,
			QueryParam: s.query, Key: key, Placeholder: Placeholder,
		})
		inside := insideURL + RoutePrefix + s.route + suffix
		api.Env = append(api.Env, s.baseEnv+"="+inside)
		if s.config != "" {
			api.Args = append(api.Args, "-c", s.config+`="`+inside+`"`)
		}
		for _, k := range append([]string{name}, s.alsoKeys...) {
			if _, set := env[k]; set && !contains(api.Keys, k) {
				api.Keys = append(api.Keys, k)
				api.Env = append(api.Env, k+"="+Placeholder)
			}
		}
	}
	return api, true
}

// ProxyEnv is the proxy configuration of every process inside: the bridge
// for http and https (upper and lower case: curl reads only the lower-case
// http_proxy), loopback direct (inside the sandbox that is the sandbox's
// own), and Node's switch to honour them (Node >= 24, and 22.21).
func ProxyEnv(insideURL string) []string {
	noProxy := "localhost,127.0.0.1,::1"
	return []string{
		"HTTP_PROXY=" + insideURL, "HTTPS_PROXY=" + insideURL,
		"http_proxy=" + insideURL, "https_proxy=" + insideURL,
		"NO_PROXY=" + noProxy, "no_proxy=" + noProxy,
		"NODE_USE_ENV_PROXY=1",
	}
}

// InsideEnv is the whole environment the egress side sets inside a
// sandbox: ProxyEnv, then the model API's variables.
func InsideEnv(insideURL string, api ModelAPI) map[string]string {
	env := map[string]string{}
	for _, kv := range append(ProxyEnv(insideURL), api.Env...) {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	return env
}

// InsideURL is the proxy's URL for a bridge listening on listen.
func InsideURL(listen string) string { return "http://" + listen }

func envMap(environ []string) map[string]string {
	m := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

func firstSet(env map[string]string, names []string) (string, string) {
	for _, n := range names {
		if v := env[n]; v != "" {
			return n, v
		}
	}
	return "", ""
}

// appendHost adds the host:port of a base URL, once.
func appendHost(hosts []string, base string) []string {
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return hosts
	}
	port := u.Port()
	if port == "" {
		port = "443"
		if u.Scheme == "http" {
			port = "80"
		}
	}
	hp := net.JoinHostPort(u.Hostname(), port)
	if contains(hosts, hp) {
		return hosts
	}
	return append(hosts, hp)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
