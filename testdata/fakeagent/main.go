// Command fakeagent stands in for an agent CLI in tests. Every argument is
// split on whitespace and ';' into commands, run in order:
//
//	print=TEXT        write TEXT and a newline to stdout (use _ for spaces)
//	stderr=TEXT       write TEXT and a newline to stderr
//	ansi              write a few lines of coloured, cursor-moving output
//	sleep=DUR         sleep (Go duration)
//	write=PATH:TEXT   write TEXT to PATH (relative to the cwd)
//	record=PATH       write {"argv","env","cwd","stdin"} as JSON to PATH
//	stdin             read stdin to EOF first (recorded by record=)
//	spawn=PIDFILE     start a long-sleeping child and write its pid to PIDFILE
//	pidfile=PATH      write this process's pid to PATH
//	ignoreterm        ignore SIGTERM (so only SIGKILL stops it)
//	stamp=PATH        append the current time (unix nanoseconds) and a newline to PATH
//	require=PATH      exit 1 unless PATH exists
//	flood=BYTES       write BYTES of coloured log lines to stdout, fast
//	prompts=N:PATH    (in a terminal) N times: wait 300 ms, draw "Proceed #i? (y/n)",
//	                  read one key; append the microseconds from the prompt's last
//	                  byte to the key to PATH
//	tty=PATH          write "tty" or "notty" (is stdin a terminal?) to PATH
//	cat=PATH          write the content of PATH to stdout
//	exec=CMD          run CMD (underscores for spaces) with sh -c; its output goes to stderr
//	streamjson=PATH   write stream-json as claude -p does: an init line, an
//	                  assistant message, and a result line whose result is
//	                  the content of PATH
//	hostile=MB        write what a broken agent may: a line of MB megabytes of
//	                  text, one of a JSON message whose text is MB megabytes
//	                  with NULs, a '{' and MB megabytes of NULs, then 200,000
//	                  short lines
//	exit=N            exit with status N
//
// Arguments that are not commands (flags of an adapter) are ignored.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/term"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "__sleep_child" {
		time.Sleep(time.Hour)
		return
	}
	var stdin string
	var cmds []string
	for _, a := range os.Args[1:] {
		for _, f := range strings.FieldsFunc(a, func(r rune) bool { return r == ';' || r == ' ' || r == '\n' || r == '\t' }) {
			cmds = append(cmds, f)
		}
	}
	for _, c := range cmds {
		key, val, hasVal := strings.Cut(c, "=")
		if !hasVal && key != "ansi" && key != "stdin" && key != "ignoreterm" {
			continue // a word of prose (a system prompt), not a command
		}
		switch key {
		case "print":
			fmt.Println(strings.ReplaceAll(val, "_", " "))
		case "stderr":
			fmt.Fprintln(os.Stderr, strings.ReplaceAll(val, "_", " "))
		case "ansi":
			fmt.Print("\x1b[1;32mgreen bold\x1b[0m line\n\x1b[2K\rprogress 50%\r\x1b[2Kprogress 100%\n\x1b[31mred\x1b[0m\n")
		case "sleep":
			d, err := time.ParseDuration(val)
			must(err)
			time.Sleep(d)
		case "write":
			path, text, _ := strings.Cut(val, ":")
			must(os.WriteFile(path, []byte(strings.ReplaceAll(text, "_", " ")), 0o644))
		case "stdin":
			b, err := io.ReadAll(os.Stdin)
			must(err)
			stdin = string(b)
			fmt.Printf("got stdin: %q\n", stdin)
		case "record":
			cwd, _ := os.Getwd()
			b, _ := json.MarshalIndent(map[string]any{"argv": os.Args, "env": os.Environ(), "cwd": cwd, "stdin": stdin, "pid": os.Getpid()}, "", "  ")
			must(os.WriteFile(val, b, 0o644))
		case "spawn":
			child := exec.Command(os.Args[0], "__sleep_child")
			must(child.Start())
			must(os.WriteFile(val, []byte(strconv.Itoa(child.Process.Pid)), 0o644))
		case "pidfile":
			must(os.WriteFile(val, []byte(strconv.Itoa(os.Getpid())), 0o644))
		case "ignoreterm":
			signal.Ignore(syscall.SIGTERM)
		case "stamp":
			f, err := os.OpenFile(val, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
			must(err)
			fmt.Fprintln(f, time.Now().UnixNano())
			must(f.Close())
		case "require":
			if _, err := os.Stat(val); err != nil {
				fmt.Fprintln(os.Stderr, "missing required file", val)
				os.Exit(1)
			}
		case "flood":
			n, err := strconv.ParseInt(val, 10, 64)
			must(err)
			flood(n)
		case "prompts":
			count, path, _ := strings.Cut(val, ":")
			n, err := strconv.Atoi(count)
			must(err)
			prompts(n, path)
		case "tty":
			answer := "notty"
			if term.IsTerminal(0) {
				answer = "tty"
			}
			must(os.WriteFile(val, []byte(answer), 0o644))
		case "exec":
			cmd := exec.Command("sh", "-c", strings.ReplaceAll(val, "_", " "))
			cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
			must(cmd.Run())
		case "cat":
			b, err := os.ReadFile(val)
			must(err)
			os.Stdout.Write(b)
		case "streamjson":
			b, err := os.ReadFile(val)
			must(err)
			enc := json.NewEncoder(os.Stdout)
			must(enc.Encode(map[string]any{"type": "system", "subtype": "init", "session_id": "fake-session"}))
			must(enc.Encode(map[string]any{"type": "assistant", "message": map[string]any{"content": []map[string]any{{"type": "text", "text": string(b)}}}}))
			must(enc.Encode(map[string]any{"type": "result", "subtype": "success", "is_error": false, "result": string(b), "session_id": "fake-session"}))
		case "hostile":
			n, err := strconv.Atoi(val)
			must(err)
			hostile(n << 20)
		case "exit":
			n, err := strconv.Atoi(val)
			must(err)
			os.Exit(n)
		}
	}
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakeagent:", err)
		os.Exit(99)
	}
}

// flood writes n bytes of short ANSI-coloured lines, the shape of a busy
// build log, as fast as the terminal takes them.
func flood(n int64) {
	var block []byte
	for i := 0; len(block) < 64<<10; i++ {
		block = append(block, fmt.Sprintf("\x1b[32m%06d\x1b[0m \x1b[1mINFO\x1b[0m compiled \x1b[36mpkg/%d\x1b[0m in %dms\r\n", i, i%97, i%13)...)
	}
	w := bufio.NewWriterSize(os.Stdout, 64<<10)
	for n > 0 {
		b := block
		if int64(len(b)) > n {
			b = b[:n]
		}
		_, err := w.Write(b)
		must(err)
		n -= int64(len(b))
	}
	must(w.Flush())
}

// hostile writes lines of n bytes and many short ones, fast.
func hostile(n int) {
	w := bufio.NewWriterSize(os.Stdout, 64<<10)
	repeat := func(b byte, n int) {
		block := bytes.Repeat([]byte{b}, 64<<10)
		for n > 0 {
			k := min(n, len(block))
			_, err := w.Write(block[:k])
			must(err)
			n -= k
		}
	}
	repeat('x', n)
	_, _ = w.WriteString("\n" + `{"type":"assistant","message":{"content":[{"type":"text","text":"`)
	repeat(0, n)
	_, _ = w.WriteString(`"}]}}` + "\n{")
	repeat(0, n)
	_, _ = w.WriteString("\n")
	for i := 0; i < 200000; i++ {
		if i%2 == 0 {
			fmt.Fprintf(w, "{\"type\":\"user\",\"n\":%d}\n", i)
		} else {
			fmt.Fprintf(w, "short line %d\n", i)
		}
	}
	must(w.Flush())
}

// prompts measures how fast whoever drives this terminal answers a prompt.
func prompts(n int, path string) {
	old, err := term.MakeRaw(0)
	must(err)
	defer term.Restore(0, old)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	must(err)
	defer f.Close()
	key := make([]byte, 1)
	for i := 1; i <= n; i++ {
		time.Sleep(300 * time.Millisecond)
		// In pieces, as TUIs write: the prompt is only complete with the
		// last one, so it is found at the quiet period, not on the first read.
		for _, piece := range []string{fmt.Sprintf("\x1b[2J\x1b[Hworking on step %d\r\n", i), fmt.Sprintf("Proceed #%d? ", i), "(y/n) "} {
			_, err := os.Stdout.WriteString(piece)
			must(err)
			time.Sleep(5 * time.Millisecond)
		}
		start := time.Now().Add(-5 * time.Millisecond)
		_, err = os.Stdin.Read(key)
		must(err)
		fmt.Fprintln(f, time.Since(start).Microseconds())
		_, err = os.Stdout.WriteString(fmt.Sprintf("\x1b[2J\x1b[Hanswered %q\r\n", key))
		must(err)
	}
}
