#!/usr/bin/env bash
# The real-agent tier: installs the pinned agent CLIs from npm into a cache
# outside the repository (once; reused while the versions match), then runs
# the e2e tests against fake model servers on 127.0.0.1. No network is used
# after the install, no API account, no TTY needed (CI=true is fine).
#
#   ./e2e/run.sh                 # or: make e2e
#   ./e2e/run.sh -run Headless   # extra arguments go to `go test`
#   ./e2e/run.sh --latest        # or: make e2e-latest
#
# --latest runs the same tier against the newest release of each CLI (asked
# of the npm registry with `npm view PKG version` at run time), installed in
# a cache of its own, to see drift before users do.
#
# VIBETEAM_E2E_CACHE: the cache (default $HOME/.cache/vibeteam-e2e, or
# $HOME/.cache/vibeteam-e2e-latest with --latest).
# VIBETEAM_E2E_DUMP=1: print the debugging dump for passing tests too.
set -euo pipefail
cd "$(dirname "$0")/.."

LATEST=0
if [ "${1:-}" = "--latest" ]; then
	LATEST=1
	shift
fi
if [ "$LATEST" = 1 ]; then
	CACHE=${VIBETEAM_E2E_CACHE:-$HOME/.cache/vibeteam-e2e-latest}
else
	CACHE=${VIBETEAM_E2E_CACHE:-$HOME/.cache/vibeteam-e2e}
fi
export VIBETEAM_E2E_CACHE="$CACHE"
# The tier's tests run unsandboxed unless told otherwise (a run with
# --auto-approve is sandboxed by default where bubblewrap is installed):
# they test the agents, and their fakes reach loopback servers that a
# sandboxed process reaches only through the egress proxy. The sandbox
# has its own tests here: TestSandboxedAgents (e2e/sandbox_test.go) runs
# each real CLI with --sandbox, which wins over this variable.
export VIBETEAM_SANDBOX="${VIBETEAM_SANDBOX:-off}"

# Pinned versions: the adapters' screen patterns were checked against these.
PACKAGES=(
	"@anthropic-ai/claude-code@2.1.332"
	"@openai/codex@0.171.0"
	"@google/gemini-cli@0.61.0"
	"opencode-ai@1.18.33"
)
BINARIES=(claude codex gemini opencode)
# The Agent Client Protocol side: the ACP adapters of claude and codex (they
# drive the user's claude and codex, named by CLAUDE_CODE_EXECUTABLE and
# CODEX_PATH) and qwen, which speaks ACP itself. Installed with the CLIs.
ACP_PACKAGES=(
	"@agentclientprotocol/claude-agent-acp@0.101.0"
	"@agentclientprotocol/codex-acp@2.6.0"
	"@qwen-code/qwen-code@0.24.4"
)
ACP_BINARIES=(claude-agent-acp codex-acp qwen)
PACKAGES+=("${ACP_PACKAGES[@]}")
BINARIES+=("${ACP_BINARIES[@]}")

die() { echo "e2e: $*" >&2; exit 1; }

if [ "$LATEST" = 1 ]; then
	command -v npm >/dev/null 2>&1 || die "--latest needs npm to ask the registry for the newest versions"
	for i in "${!PACKAGES[@]}"; do
		name=${PACKAGES[$i]%@*}
		newest=$(npm view "$name" version 2>/dev/null) || die "npm view $name version failed (is the npm registry reachable?)"
		[ -n "$newest" ] || die "npm view $name version printed nothing"
		echo "e2e: $name: pinned ${PACKAGES[$i]##*@}, newest $newest"
		PACKAGES[$i]="$name@$newest"
	done
fi
# The tests name the versions they run against (and what they expect of
# each: the pinned ones or the newest).
export VIBETEAM_E2E_VERSIONS="${PACKAGES[*]}"

command -v node >/dev/null 2>&1 || die "node is not on PATH; the agent CLIs are Node programs (install Node.js >= 20)"
if ! command -v go >/dev/null 2>&1; then
	[ -x /usr/local/go/bin/go ] && export PATH="$PATH:/usr/local/go/bin" || die "go is not on PATH"
fi

# installed_version PACKAGE prints the version installed in the cache, or nothing.
installed_version() {
	local pj="$CACHE/node_modules/$1/package.json"
	[ -f "$pj" ] || return 0
	node -e 'try { process.stdout.write(require(process.argv[1]).version || "") } catch (e) {}' "$pj"
}

need_install=0
for i in "${!PACKAGES[@]}"; do
	spec=${PACKAGES[$i]}
	name=${spec%@*}
	want=${spec##*@}
	have=$(installed_version "$name")
	if [ ! -x "$CACHE/node_modules/.bin/${BINARIES[$i]}" ] || [ "$have" != "$want" ]; then
		echo "e2e: $name: want $want, have ${have:-none}"
		need_install=1
	fi
done

if [ "$need_install" = 1 ]; then
	command -v npm >/dev/null 2>&1 || die "npm is not on PATH, and the pinned agent CLIs are not installed in $CACHE (install Node.js with npm, or point VIBETEAM_E2E_CACHE at a cache that has them)"
	mkdir -p "$CACHE"
	# One install at a time per cache (parallel CI jobs on one machine).
	if command -v flock >/dev/null 2>&1; then
		exec 9>"$CACHE/.install.lock"
		flock 9
	fi
	echo "e2e: npm install --prefix $CACHE ${PACKAGES[*]} (about 1.1 GB, 1-2 min the first time)"
	start=$SECONDS
	npm install --prefix "$CACHE" --no-audit --no-fund --loglevel=error "${PACKAGES[@]}" \
		|| die "npm install failed (is the npm registry reachable? see the npm output above)"
	echo "e2e: installed in $((SECONDS - start)) s"
	for b in "${BINARIES[@]}"; do
		[ -x "$CACHE/node_modules/.bin/$b" ] || die "npm install finished but $CACHE/node_modules/.bin/$b is missing"
	done
else
	echo "e2e: agent CLIs found in $CACHE: ${PACKAGES[*]}"
fi

exec go test -tags e2e -count=1 -v -timeout 60m ./e2e/... "$@"
