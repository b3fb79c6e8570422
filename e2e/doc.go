// Package e2e is the real-agent tier: tests that run the vibeteam binary
// with the real agent CLIs (installed from npm by run.sh into a cache
// outside the repository) against fake model servers on 127.0.0.1. They
// carry the build tag e2e, so the normal `go test ./...` skips them:
//
//	./e2e/run.sh                                  # installs the CLIs, runs the tier
//	go test -tags e2e -race -count=1 ./e2e/...    # the CLIs already installed
//
// VIBETEAM_E2E_CACHE names the cache (default $HOME/.cache/vibeteam-e2e).
package e2e
