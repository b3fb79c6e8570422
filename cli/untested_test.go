package cli

import (
	"strings"
	"testing"
)

// A session that runs a CLI other than the version its adapter was tested
// with says so once on stderr, whatever the number of its tasks; a tested
// version says nothing.
func TestRunWarnsOnceAboutAnUntestedVersion(t *testing.T) {
	p := newProject(t)
	p.versionAdapter("newer", "2.1.198", "2.1.197")
	p.versionAdapter("same", "2.1.197", "2.1.197")
	p.write("wf.yaml", `id: wf
stages:
  - id: s
    tasks:
      - { id: a, adapter: newer, executionMode: headless, prompt: hi }
      - { id: b, adapter: newer, executionMode: headless, prompt: hi }
      - { id: c, adapter: same, executionMode: headless, prompt: hi }
`)
	r := p.run("run", "wf.yaml")
	wantCode(t, r, 0)
	want := "warning: newer newer-cli 2.1.198, newer than the tested 2.1.197: its screens or output may have changed"
	if n := strings.Count(r.stderr, want); n != 1 {
		t.Errorf("stderr has %d warnings %q, want 1:\n%s", n, want, r.stderr)
	}
	if strings.Contains(r.stderr, "same-cli") {
		t.Errorf("a tested version was reported:\n%s", r.stderr)
	}
}
