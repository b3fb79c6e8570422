# vibeteam — build, test, benchmark, end-to-end tests.
GO      ?= go
BIN     ?= bin/vibeteam
PREFIX  ?= $(HOME)/.local

.PHONY: build test bench e2e install check

build:
	$(GO) build -o $(BIN) .

# The test command of the README and of CI.
test:
	gofmt -l . | grep -v '^testdata/' | (! grep .) || (echo "gofmt needed on the files above"; exit 1)
	$(GO) vet ./...
	$(GO) test -race -count=1 ./...

# Benchmarks print a table: validation of a 500-task workflow, the ANSI
# stripper, and the PTY output path.
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./core/workflow/ ./core/runner/ ./cli/

# The real-agent tier (installs pinned agent CLIs into a cache outside the repo).
e2e:
	./e2e/run.sh

install:
	$(GO) build -o $(PREFIX)/bin/vibeteam .
	@echo "installed $(PREFIX)/bin/vibeteam"
