// Command fakeline is a line-oriented program for tests of answering
// questions: it prints a question, reads one key (raw mode, no echo), prints
// what it got on a new line, and asks again, -asks times. Old questions stay
// in its scrollback, as with any program that writes lines. Then it prints
// a "> " prompt and waits for a line.
//
// Every key it receives is appended to -record: "answer:<key>" for a key
// that answered a question, "extra:<key>" for one that came when no question
// was asked (a second answer to the same question lands there).
//
// Flags: -asks N, -question TEXT, -between N (lines printed after each
// answer, to scroll), -react DUR (wait this long after a key before
// printing anything), -exit (exit 0 after the last answer instead of
// showing the prompt), -message TEXT (printed first, as a transcript).
// FAKELINE_ASKS, FAKELINE_QUESTION and FAKELINE_RECORD set the defaults, so
// an adapter file can be used as written (e.g. the README's aider example,
// whose --yes-always and --no-pretty are accepted and ignored).
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"

	"golang.org/x/term"
)

var (
	asks     = flag.Int("asks", envInt("FAKELINE_ASKS", 3), "how many times to ask")
	question = flag.String("question", envOr("FAKELINE_QUESTION", "Proceed? (y/n) "), "the question")
	between  = flag.Int("between", 0, "lines printed after each answer")
	react    = flag.Duration("react", 0, "delay before reacting to a key")
	record   = flag.String("record", os.Getenv("FAKELINE_RECORD"), "append every key received to this file")
	exit     = flag.Bool("exit", false, "exit after the last answer")
	message  = flag.String("message", "", "a message to show first")
	_        = flag.Bool("yes-always", false, "accepted, ignored")
	_        = flag.Bool("no-pretty", false, "accepted, ignored")
)

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func envInt(k string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(k)); err == nil {
		return n
	}
	return def
}

func rec(s string) {
	if *record == "" {
		return
	}
	f, err := os.OpenFile(*record, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err == nil {
		fmt.Fprintln(f, s)
		f.Close()
	}
}

func main() {
	flag.Parse()
	if old, err := term.MakeRaw(0); err == nil {
		defer term.Restore(0, old)
	}
	keys := make(chan byte, 1024)
	go func() {
		buf := make([]byte, 64)
		for {
			n, err := os.Stdin.Read(buf)
			for _, b := range buf[:n] {
				keys <- b
			}
			if err != nil {
				close(keys)
				return
			}
		}
	}()
	if *message != "" {
		fmt.Printf("user: %s\r\n", *message)
	}
	for i := 1; i <= *asks; i++ {
		fmt.Print(*question)
		b, ok := <-keys
		if !ok {
			return
		}
		rec(fmt.Sprintf("answer:%c", b))
		time.Sleep(*react)
		fmt.Printf("\r\ngot %c (%d of %d)\r\n", b, i, *asks)
		for j := 0; j < *between; j++ {
			fmt.Printf("working on item %d.%d\r\n", i, j)
		}
	}
	if *exit {
		// Keys typed after the last question still count as extras.
		drain(keys, 500*time.Millisecond)
		return
	}
	fmt.Print("all answered\r\n> ")
	line := []byte{}
	for b := range keys {
		if b == '\r' || b == '\n' {
			rec("line:" + string(line))
			fmt.Printf("\r\nok: %s\r\n> ", line)
			line = line[:0]
			continue
		}
		if len(line) == 0 && (b == 'y' || b == 'n') {
			rec(fmt.Sprintf("extra:%c", b))
		}
		line = append(line, b)
	}
}

func drain(keys <-chan byte, d time.Duration) {
	deadline := time.After(d)
	for {
		select {
		case b, ok := <-keys:
			if !ok {
				return
			}
			rec(fmt.Sprintf("extra:%c", b))
		case <-deadline:
			return
		}
	}
}
