package workflow

import (
	"strings"
	"testing"
	"time"
)

// A merge step's gate: a command, true (the project's default) or false
// (none), with the project's default filled in at load.
func TestMergeGate(t *testing.T) {
	t.Parallel()
	str := func(s string) *string { return &s }
	for _, c := range []struct {
		name, step  string
		def         *string
		gate, err   string
		timeout     time.Duration
		noGate, dft bool
	}{
		{name: "command", step: "gate: make check\ngate_timeout: 5m", gate: "make check", timeout: 5 * time.Minute},
		{name: "command, default timeout", step: "gate: make check", def: str("go test ./..."), gate: "make check", timeout: 30 * time.Minute},
		{name: "no gate, no default", step: "require_review: false"},
		{name: "no gate written takes the default", step: "require_review: false", def: str("go test ./..."), gate: "go test ./...", timeout: 30 * time.Minute},
		{name: "true is the default", step: "gate: true", def: str("go test ./..."), gate: "go test ./...", dft: true, timeout: 30 * time.Minute},
		{name: "false is none, whatever the default", step: "gate: false", def: str("go test ./..."), noGate: true},
		{name: "true without a default", step: "gate: true", def: str(""), err: `g.yaml:5:11: steps[0].gate: gate: true runs the project's default gate, and .vibeteam/config.yaml sets none`},
		{name: "empty", step: `gate: " "`, err: `g.yaml:5:11: steps[0].gate: must be a command, true`},
		{name: "a number", step: "gate: 3", err: `g.yaml:5:11: steps[0].gate: must be a string`},
		{name: "a bad timeout", step: "gate: x\ngate_timeout: soon", err: `steps[0].gate_timeout`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			step := "    " + strings.ReplaceAll(c.step, "\n", "\n    ")
			src := "name: g\nsteps:\n  - name: merge\n    type: merge\n" + step + "\n"
			opts := defaultOpts()
			opts.DefaultGate = c.def
			def, err := Parse([]byte(src), "g.yaml", opts)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			m := def.Steps[0].Merge
			if m.Gate != c.gate || time.Duration(m.GateTimeout) != c.timeout || m.NoGate != c.noGate || m.GateDefault != c.dft {
				t.Fatalf("merge = %+v", *m)
			}
		})
	}
}
