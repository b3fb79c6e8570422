package ui

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/term"
)

// stderrWidth is a function giving the width of the terminal on stderr in
// columns (0 when unknown, or when stderr is no terminal). It asks at
// every call rather than caching: the size is one ioctl, and a resize
// between two redraws is then never missed.
func stderrWidth(streams Streams) func() int {
	f, ok := streams.Err.(interface{ Fd() uintptr })
	if !ok || !streams.ErrTTY {
		return func() int { return 0 }
	}
	return func() int {
		cols, _, err := term.GetSize(int(f.Fd()))
		if err != nil {
			return 0
		}
		return cols
	}
}

// eraseBoard moves back up over the board lines drawn (their widths) and
// clears them. Lines are drawn narrower than the terminal, so each takes
// one row, unless the terminal has since been narrowed: most terminals
// (VTE, iTerm2, kitty, tmux...) then rewrap each line over several rows,
// and moving up one row per line would leave the rest as a stale copy.
func eraseBoard(w io.Writer, drawn []int, cols int) {
	if len(drawn) == 0 {
		return
	}
	rows := 0
	for _, width := range drawn {
		n := 1
		if cols > 0 && width > cols {
			n = (width + cols - 1) / cols
		}
		rows += n
	}
	fmt.Fprintf(w, "\r\x1b[%dA\x1b[J", rows)
}

// redrawEvery calls redraw every period and at once when the terminal is
// resized, until stop is closed; then it closes done.
func redrawEvery(period time.Duration, redraw func(), stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	defer signal.Stop(winch)
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		case <-winch:
		}
		redraw()
	}
}
