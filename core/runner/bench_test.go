package runner

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/vibeteam/vibeteam/core/state"
)

var (
	streamOnce sync.Once
	streamFile string
)

// mixedStream writes (once) 100 MB of short ANSI-coloured lines with some
// cursor movement and redraws, the shape of DESIGN.md §7's measurement.
func mixedStream(b *testing.B) string {
	streamOnce.Do(func() {
		dir, err := os.MkdirTemp("", "vibeteam-stream")
		if err != nil {
			b.Fatal(err)
		}
		streamFile = filepath.Join(dir, "stream")
		f, err := os.Create(streamFile)
		if err != nil {
			b.Fatal(err)
		}
		w := bufio.NewWriter(f)
		var n int
		for i := 0; n < 100<<20; i++ {
			var line string
			switch i % 10 {
			case 0:
				line = fmt.Sprintf("\x1b[2K\r\x1b[33m⠋\x1b[0m building %d/%d\r", i, 1<<20)
			case 5:
				line = fmt.Sprintf("\x1b[1A\x1b[2K\x1b[1;34mstep %d\x1b[0m done\r\n", i)
			default:
				line = fmt.Sprintf("\x1b[32m%08d\x1b[0m \x1b[1mINFO\x1b[0m compiled \x1b[36mpkg/%d\x1b[0m in %dms\r\n", i, i%97, i%13)
			}
			k, _ := w.WriteString(line)
			n += k
		}
		if err := w.Flush(); err != nil {
			b.Fatal(err)
		}
		f.Close()
	})
	return streamFile
}

// bareLoop drains `cat file` through a PTY with plain 64 KiB reads: the
// baseline of DESIGN.md §7.
func bareLoop(b *testing.B, file string) time.Duration {
	start := time.Now()
	cmd := exec.Command("cat", file)
	ptmx, err := pty.Start(cmd)
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 64<<10)
	var total int64
	for {
		n, err := ptmx.Read(buf)
		total += int64(n)
		if err != nil {
			break
		}
	}
	_ = cmd.Wait()
	ptmx.Close()
	if total == 0 {
		b.Fatal("bare loop read nothing")
	}
	return time.Since(start)
}

// fullPath drains the same stream through the terminal runner with
// everything on: raw log, clean text to a log, output callbacks, the
// screen and state checks.
func fullPath(b *testing.B, file, dir string) time.Duration {
	raw, err := os.Create(filepath.Join(dir, "raw.log"))
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	cleanPath := filepath.Join(dir, "clean.log")
	clean, err := state.OpenTaskLog(cleanPath, 20)
	if err != nil {
		b.Fatal(err)
	}
	checks := 0
	start := time.Now()
	term, err := StartTerminal(Spec{Command: "cat", Args: []string{file}}, TerminalOptions{
		RawLog:   raw,
		OnOutput: func(c Chunk) { _, _ = clean.Write(c.Clean) },
		States:   []StatePattern{{Name: "interaction_idle", Pattern: regexp.MustCompile(`(?m)^> $`)}, {Name: "working", Pattern: regexp.MustCompile(`building`)}},
		OnState:  func(Detection) { checks++ },
	})
	if err != nil {
		b.Fatal(err)
	}
	<-term.Done()
	d := time.Since(start)
	_ = clean.Close()
	if checks == 0 {
		b.Fatal("no state checks ran")
	}
	if fi, err := os.Stat(cleanPath); err != nil || fi.Size() < 50<<20 {
		b.Fatalf("clean log too small: %v %v", fi, err)
	}
	return d
}

// BenchmarkPTYThroughput reports the output path's speed as a ratio to a
// bare creack/pty read loop draining the same 100 MB in the same run
// (target ≥ 0.7).
func BenchmarkPTYThroughput(b *testing.B) {
	file := mixedStream(b)
	fi, _ := os.Stat(file)
	mb := float64(fi.Size()) / (1 << 20)
	var bare, full time.Duration
	for i := 0; i < b.N; i++ {
		dir := b.TempDir()
		bare += bareLoop(b, file)
		full += fullPath(b, file, dir)
	}
	b.ReportMetric(mb/bare.Seconds()*float64(b.N), "bare-MB/s")
	b.ReportMetric(mb/full.Seconds()*float64(b.N), "vibeteam-MB/s")
	b.ReportMetric(bare.Seconds()/full.Seconds(), "ratio")
}
