package cli

import (
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

func TestDescribeBuild(t *testing.T) {
	t.Parallel()
	vcs := func(kv ...string) []debug.BuildSetting {
		var out []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			out = append(out, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return out
	}
	for _, c := range []struct {
		bi   *debug.BuildInfo
		want string
	}{
		{nil, "vibeteam version (devel)"},
		{&debug.BuildInfo{}, "vibeteam version (devel)"},
		{&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "vibeteam version (devel)"},
		{&debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}}, "vibeteam version v1.4.0"},
		{
			&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("vcs", "git", "vcs.revision", "3f9ab2286958b414e1e80afe2ffac35839c2a63a", "vcs.modified", "false")},
			"vibeteam version (devel) (revision 3f9ab2286958)",
		},
		{
			&debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261123182727-3f9ab2286958+dirty"}, Settings: vcs("vcs.revision", "3f9ab2286958b414e1e80afe2ffac35839c2a63a", "vcs.modified", "true")},
			"vibeteam version v0.0.0-20261123182727-3f9ab2286958+dirty (revision 3f9ab2286958, modified)",
		},
		{&debug.BuildInfo{Settings: vcs("vcs.revision", "abc")}, "vibeteam version (devel) (revision abc)"},
	} {
		if got := describeBuild(c.bi); got != c.want {
			t.Errorf("describeBuild(%+v) = %q, want %q", c.bi, got, c.want)
		}
	}
}

// A binary built from a git checkout names the revision it was built from.
func TestVersionOfAVCSBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary again")
	}
	t.Parallel()
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "vibeteam")
	build := exec.Command("go", "build", "-buildvcs=true", "-o", bin, "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if want := "revision " + string(head[:12]); !strings.Contains(string(out), want) {
		t.Errorf("--version printed %q, want it to name %s", out, want)
	}
}
