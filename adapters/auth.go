package adapters

import (
	"os"
	"slices"
)

// builtinAuthEnv is the auth.env of every built-in adapter, written out so
// that a run need not parse the adapters it does not use to know them
// (TestBuiltinAuthEnv keeps it equal to the files).
var builtinAuthEnv = []string{
	"ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN", // claude
	"OPENAI_API_KEY", "CODEX_API_KEY", // codex
	"GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_APPLICATION_CREDENTIALS", // gemini
	"DASHSCOPE_API_KEY", // qwen (and OPENAI_API_KEY)
}

// AuthEnv are the names of the variables the credentials of the adapters
// come from (their auth.env): every built-in's, and those of the names
// given (the adapters a session uses; unknown names are skipped).
func (r *Registry) AuthEnv(names ...string) []string {
	out := slices.Clone(builtinAuthEnv)
	for _, name := range names {
		r.mu.RLock()
		e, ok := r.entries[name]
		r.mu.RUnlock()
		if !ok || e.source == SourceBuiltin {
			continue
		}
		for _, v := range e.load().auth.env {
			if !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
	}
	return out
}

// minAuthValue is the shortest credential redacted: a real key is tens of
// characters, while a placeholder such as OPENAI_API_KEY=test (a mock's,
// in CI) would turn every "test" of a prompt into *** in the session,
// and resume would run that.
const minAuthValue = 8

// AuthValues are the values, of at least 8 characters, of the variables
// named in vibeteam's environment: the credentials a task inherits, which
// it may print and which are then written as *** like any secret.
func AuthValues(names []string) []string {
	var vs []string
	for _, n := range names {
		if v := os.Getenv(n); len(v) >= minAuthValue {
			vs = append(vs, v)
		}
	}
	return vs
}

// BuiltinAuthValues are AuthValues of the built-in adapters' auth.env.
func BuiltinAuthValues() []string { return AuthValues(builtinAuthEnv) }
