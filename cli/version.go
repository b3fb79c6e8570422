package cli

import (
	"fmt"
	"runtime/debug"
	"strings"

	ucli "github.com/urfave/cli/v2"
)

func versionCommand(streams IO) *ucli.Command {
	return &ucli.Command{
		Name:  "version",
		Usage: "print the version and the VCS revision it was built from",
		Action: func(*ucli.Context) error {
			fmt.Fprintln(streams.Out, versionString())
			return nil
		},
	}
}

func versionString() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = nil
	}
	return describeBuild(bi)
}

// describeBuild says which build this is from what the Go toolchain recorded
// in it: the module version (set by `go install …@vX`, or derived from the
// VCS by `go build`), and the revision and dirty flag of the checkout it was
// built from. A test binary or `go run` records neither: "(devel)".
func describeBuild(bi *debug.BuildInfo) string {
	version := "(devel)"
	var rev, modified string
	if bi != nil {
		if v := bi.Main.Version; v != "" {
			version = v
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value
			}
		}
	}
	out := "vibeteam version " + version
	var extra []string
	if rev != "" {
		extra = append(extra, "revision "+rev[:min(len(rev), 12)])
	}
	if modified == "true" {
		extra = append(extra, "modified")
	}
	if len(extra) > 0 {
		out += " (" + strings.Join(extra, ", ") + ")"
	}
	return out
}
