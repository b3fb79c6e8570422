// Package reportcmd is `vibeteam report`: a session's report as one HTML
// file.
package reportcmd

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/vibeteam/vibeteam/cli/cmdutil"
	"github.com/vibeteam/vibeteam/core/report"
	"github.com/vibeteam/vibeteam/core/state"
	"github.com/vibeteam/vibeteam/internal/reportpage"
)

// Options are what `vibeteam report` is asked.
type Options struct {
	IO      cmdutil.IO
	Manager *state.Manager
	ID      string // the session's whole id
	Out     string // --out: a file, "-" for stdout, "" for .vibeteam/reports/ID.html
	Open    bool   // --open
}

// NewCmdReport is the `report` command. Its action gathers the Options and
// hands them to runF (nil: Run).
func NewCmdReport(streams cmdutil.IO, runF func(*Options) error) *ucli.Command {
	if runF == nil {
		runF = Run
	}
	return &ucli.Command{
		Name:      "report",
		Usage:     "write a session's report: one HTML file with its timeline, spend, slowest steps and outcomes",
		ArgsUsage: "ID",
		Description: `Writes one self-contained HTML file (inline SVG and CSS, nothing to
fetch) for a session, a backlog run (run --ready: one row per bead) or a
grimoire (one row per step), built from the session files and event logs
alone: it reads a run by an older vibeteam, and a run still going.

The file goes to .vibeteam/reports/ID.html unless --out says where;
--out - writes it to stdout. The path is printed. With --open it is also
opened in the default browser, where there is one (at a terminal).

Exit codes: 0 written; 1 it could not be written; 2 usage error or no such
session.`,
		Flags: []ucli.Flag{
			cmdutil.BaseDirFlag,
			&ucli.StringFlag{Name: "out", Aliases: []string{"o"}, Usage: "write the report to `FILE` (- is stdout)"},
			&ucli.BoolFlag{Name: "open", Usage: "open it in the default browser, where there is one"},
		},
		Action: func(c *ucli.Context) error {
			mgr, id, err := cmdutil.SessionArg(c)
			if err != nil {
				return err
			}
			return runF(&Options{IO: streams, Manager: mgr, ID: id, Out: c.String("out"), Open: c.Bool("open")})
		},
	}
}

// Run writes the session's report where opts say, and prints its path.
func Run(opts *Options) error {
	now := time.Now()
	r, err := report.Build(opts.Manager, opts.ID, now)
	if err != nil {
		return cmdutil.SessionLoadError(err)
	}
	var page bytes.Buffer
	if err := reportpage.Render(&page, r, now); err != nil {
		return cmdutil.Exitf(cmdutil.ExitFailed, "render the report: %v", err)
	}
	out := opts.Out
	if out == "-" {
		if _, err := opts.IO.Out.Write(page.Bytes()); err != nil {
			return cmdutil.Exitf(cmdutil.ExitFailed, "%v", err)
		}
		return nil
	}
	if out == "" {
		out = filepath.Join(opts.Manager.Root(), "reports", r.ID+".html")
	}
	if err := writeReport(out, page.Bytes()); err != nil {
		return cmdutil.Exitf(cmdutil.ExitFailed, "write the report: %v", err)
	}
	fmt.Fprintln(opts.IO.Out, out)
	if opts.Open && opts.IO.ErrTTY {
		openInBrowser(out)
	}
	return nil
}

// writeReport writes data to path whole or not at all, private to the
// user (it holds what agents said).
func writeReport(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".report-*.html")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// openInBrowser hands path to the system's opener, where there is one
// (and a display for it): a report opened nowhere is still written.
func openInBrowser(path string) {
	name := "xdg-open"
	switch {
	case runtime.GOOS == "darwin":
		name = "open"
	case os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "":
		return
	}
	bin, err := exec.LookPath(name)
	if err != nil {
		return
	}
	cmd := exec.Command(bin, path)
	if cmd.Start() == nil {
		_ = cmd.Process.Release()
	}
}
