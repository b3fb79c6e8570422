package adapters

import (
	"slices"
	"strings"
	"testing"
)

// A prompt too long for one argument goes to stdin where the adapter says
// its CLI reads it there, and is refused, naming the limit and the way
// out, where it does not; position: stdin always uses stdin.
func TestLongPromptOnStdin(t *testing.T) {
	long := strings.Repeat("x", MaxArgPrompt+1)
	onStdin := newTestAdapter(t, `command: tool
modes:
  headless: { args: [run], prompt: { position: arg, separator: "--", longOnStdin: true } }
`, Options{Name: "t"})
	lc, err := onStdin.LaunchConfig(Headless, long, nil)
	if err != nil {
		t.Fatal(err)
	}
	if lc.Stdin != long || !slices.Equal(lc.Args, []string{"run"}) {
		t.Errorf("long prompt: stdin %d bytes, args %q", len(lc.Stdin), lc.Args)
	}
	if lc, _ := onStdin.LaunchConfig(Headless, "short", nil); lc.Stdin != "" || !slices.Equal(lc.Args, []string{"run", "--", "short"}) {
		t.Errorf("short prompt: stdin %q, args %q", lc.Stdin, lc.Args)
	}

	always := newTestAdapter(t, `command: tool
modes:
  headless: { args: [run], prompt: { position: stdin } }
`, Options{Name: "t"})
	if lc, _ := always.LaunchConfig(Headless, "-short", nil); lc.Stdin != "-short" || !slices.Equal(lc.Args, []string{"run"}) {
		t.Errorf("position stdin: stdin %q, args %q", lc.Stdin, lc.Args)
	}

	asArg := newTestAdapter(t, `command: tool
modes:
  headless: { args: [run], prompt: { position: arg, separator: "--" } }
`, Options{Name: "t"})
	_, err = asArg.LaunchConfig(Headless, long, nil)
	if err == nil || !strings.Contains(err.Error(), "longer than one argument") || !strings.Contains(err.Error(), "longOnStdin") {
		t.Errorf("a long prompt as an argument: %v", err)
	}
}

func TestPromptOnStdinIsHeadlessOnly(t *testing.T) {
	_, err := Parse("t.yaml", []byte(`name: t
command: tool
modes:
  interactive: { args: [], prompt: { position: stdin } }
`))
	if err == nil || !strings.Contains(err.Error(), "t.yaml:4:") || !strings.Contains(err.Error(), "headless mode") {
		t.Errorf("stdin in interactive mode: %v", err)
	}
}
