# vibeteam — build, test, benchmark, end-to-end tests.
GO      ?= go
BIN     ?= bin/vibeteam
PREFIX  ?= $(HOME)/.local

.PHONY: build test bench e2e e2e-latest install check

build:
	$(GO) build -o $(BIN) .

# The test command of the README and of CI (vet for macOS too: a Linux-only
# system call must not slip into a file every system builds; and the e2e
# tier's files, which only build with their tag).
test:
	gofmt -l . | grep -v '^testdata/' | (! grep .) || (echo "gofmt needed on the files above"; exit 1)
	$(GO) vet ./...
	GOOS=darwin $(GO) vet ./...
	$(GO) vet -tags e2e ./e2e/
	$(GO) test -race -count=1 -timeout 30m ./...

# Benchmarks print a table: `vibeteam --help` and `validate` on 500 tasks
# (whole processes), the ANSI stripper, the PTY output path against a bare
# read loop (ratio), the reaction time to a prompt (p50/p90), and peak RSS
# while a task writes 100 MB and 1 GB; the sandbox proxy's added p50
# latency (bridge included) and its streaming MB/s; `report` on a 100-bead
# backlog run (ms, processor ms, and the file's KB); over ACP with the fake
# agent, a permission request to the policy's answer and a prompt's result
# to the task's DONE event (p50/p99 ms), and a flood of 100,000 chunks into
# the event log (chunks/s, peak RSS).
bench:
	$(GO) test -run '^$$' -bench . -benchmem -timeout 30m ./core/workflow/ ./core/runner/ ./core/sandbox/egress/ ./core/acp/ ./cli/

# The real-agent tier (installs pinned agent CLIs into a cache outside the repo).
e2e:
	./e2e/run.sh

# The same tier against the newest release of each agent CLI (npm view at
# run time), in a cache of its own: drift shows here before users see it.
e2e-latest:
	./e2e/run.sh --latest

install:
	$(GO) build -o $(PREFIX)/bin/vibeteam .
	@echo "installed $(PREFIX)/bin/vibeteam"
