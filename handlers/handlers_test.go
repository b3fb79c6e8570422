package handlers

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

func TestBuiltins(t *testing.T) {
	cases := []struct {
		spec, keys string
	}{
		{"pressEnter", "\r"},
		{"confirmYes", "y"},
		{"confirmNo", "n"},
		{"select:1", "1"},
		{"select:9", "9"},
		{"pressEscape", "\x1b"},
		{"arrowUp", "\x1b[A"},
		{"arrowDown", "\x1b[B"},
		{"pressTab", "\t"},
		{"type:/review", "/review\r"},
		{"type:a:b c", "a:b c\r"},
	}
	for _, c := range cases {
		f, err := Lookup(c.spec)
		if err != nil {
			t.Fatalf("Lookup(%q): %v", c.spec, err)
		}
		a := f(Context{TaskID: "t", State: "interaction_handler", Screen: "x"})
		if a == nil {
			t.Fatalf("%s: nil action", c.spec)
		}
		if a.Keys != c.keys {
			t.Errorf("%s: keys %q, want %q", c.spec, a.Keys, c.keys)
		}
		if a.Description == "" {
			t.Errorf("%s: empty description", c.spec)
		}
	}
}

func TestActionsAreNotShared(t *testing.T) {
	for _, spec := range []string{"pressEnter", "select:2", "type:x"} {
		f, err := Lookup(spec)
		if err != nil {
			t.Fatal(err)
		}
		a := f(Context{})
		a.Keys = "mutated"
		if b := f(Context{}); b.Keys == "mutated" {
			t.Errorf("%s: a caller's change leaked into the next action", spec)
		}
	}
}

func TestLookupErrors(t *testing.T) {
	cases := []struct {
		spec, want string
	}{
		{"nope", `unknown handler "nope" (known: arrowDown, arrowUp, choose, confirmNo, confirmYes, pressEnter, pressEscape, pressTab, select, `},
		{"", `unknown handler ""`},
		{"select", `handler "select": want an option number 1..9, got ""`},
		{"select:", `want an option number 1..9`},
		{"select:0", `got "0"`},
		{"select:10", `got "10"`},
		{"select:x", `got "x"`},
		{"select:+1", `got "+1"`},
		{"pressEnter:2", `handler "pressEnter:2": takes no argument, got "2"`},
		{"type", `want text to type`},
		{"type:", `want text to type`},
	}
	for _, c := range cases {
		_, err := Lookup(c.spec)
		if err == nil {
			t.Errorf("Lookup(%q): no error", c.spec)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("Lookup(%q) = %q, want it to contain %q", c.spec, err, c.want)
		}
	}
}

// Registered once per test binary: a second Register of a name panics, and
// tests may run more than once (-count).
func init() {
	Register("testOnlyMatchEcho", func(arg string) (Func, error) {
		return func(ctx Context) *Action {
			if ctx.Match == "" {
				return nil // does not apply
			}
			return &Action{Keys: arg + ctx.Match, Description: "echo"}
		}, nil
	})
}

var concurrentRun atomic.Int64

func TestRegisterCustom(t *testing.T) {
	f, err := Lookup("testOnlyMatchEcho:>")
	if err != nil {
		t.Fatal(err)
	}
	if a := f(Context{}); a != nil {
		t.Errorf("want nil action without a match, got %+v", a)
	}
	if a := f(Context{Match: "m"}); a == nil || a.Keys != ">m" {
		t.Errorf("got %+v", a)
	}
	found := false
	for _, n := range Names() {
		found = found || n == "testOnlyMatchEcho"
	}
	if !found {
		t.Errorf("Names() = %v lacks the registered handler", Names())
	}
}

func TestRegisterPanics(t *testing.T) {
	ok := func(string) (Func, error) { return nil, nil }
	for name, fn := range map[string]func(){
		"duplicate":  func() { Register("pressEnter", ok) },
		"empty name": func() { Register("", ok) },
		"colon":      func() { Register("a:b", ok) },
		"nil":        func() { Register("testOnlyNil", nil) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			fn()
		})
	}
}

func TestConcurrentUse(t *testing.T) {
	run := concurrentRun.Add(1)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			Register(fmt.Sprintf("testOnlyConcurrent%d_%d", run, i), keys("k", "k"))
		}()
		go func() {
			defer wg.Done()
			for range 100 {
				if _, err := Lookup("select:3"); err != nil {
					t.Error(err)
					return
				}
				_ = Names()
			}
		}()
	}
	wg.Wait()
}
