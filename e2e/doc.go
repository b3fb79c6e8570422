// Package e2e is the real-agent tier: tests that run the vibeteam binary
// with the real agent CLIs — Claude Code, Codex, Gemini CLI, opencode —
// (installed from npm by run.sh into a cache outside the repository)
// against fake model servers on 127.0.0.1 (fakeanthropic; fakeopenai for
// Codex's Responses API and opencode's chat completions; fakegemini). Each
// test gets fresh HOME / CODEX_HOME / XDG directories, and fails when any
// process that mentions them outlives vibeteam. The tests carry the build
// tag e2e, so the normal `go test ./...` skips them:
//
//	./e2e/run.sh                                  # installs the CLIs, runs the tier
//	go test -tags e2e -race -count=1 ./e2e/...    # the CLIs already installed
//
// Environment: VIBETEAM_E2E_CACHE names the cache (default
// $HOME/.cache/vibeteam-e2e); VIBETEAM_E2E_RUN_TIMEOUT bounds one vibeteam
// run (default 120s); VIBETEAM_E2E_DUMP=1 prints the failure dump (vibeteam's
// output, model traffic, session, events, task logs, the agent's last
// screen) for passing tests too; VIBETEAM_E2E_BIN runs a vibeteam built
// elsewhere instead of building the working tree (e.g. to check a test
// against an older revision).
//
// The tests under -race build vibeteam with -race as well.
package e2e
