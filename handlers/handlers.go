// Package handlers is the standard interaction handler library: named
// answers (pressEnter, confirmYes, select:2, ...) that an adapter's auto
// policy refers to with `use:` and that the interaction prompt offers as
// quick actions.
package handlers

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Context is what a handler sees when an interaction state fires.
type Context struct {
	TaskID string
	State  string // the name of the state that fired
	Screen string // rendered screen text
	Match  string // text matched by the rule's `when`
}

// Action is keys to send to the agent's terminal, or a menu option to
// choose by its label.
type Action struct {
	Keys        string
	Description string // for event logs and the user, e.g. "select option 2"
	// Choose is the label of a menu option (Keys is then empty): the engine
	// finds it on the rendered screen, moves the selection to it with the
	// arrow keys, checks on the screen that the selection is there, and
	// only then presses Enter. A label not on the screen is never guessed
	// at: a person is asked.
	Choose string
}

// Func returns an action, or nil when it does not apply to ctx.
type Func func(ctx Context) *Action

// Factory builds a Func from the argument after the colon of a spec
// ("2" in "select:2"; "" when the spec has no colon).
type Factory func(arg string) (Func, error)

var (
	mu       sync.RWMutex
	registry = map[string]Factory{}
)

// Register adds a handler factory under name. Registering is a program-setup
// step, so a bad name or a second registration of the same name is a bug in
// the caller and panics rather than silently shadowing a built-in.
func Register(name string, f func(arg string) (Func, error)) {
	if name == "" || strings.ContainsAny(name, ": \t\r\n") {
		panic(fmt.Sprintf("handlers: invalid handler name %q", name))
	}
	if f == nil {
		panic(fmt.Sprintf("handlers: nil factory for %q", name))
	}
	mu.Lock()
	defer mu.Unlock()
	if _, dup := registry[name]; dup {
		panic(fmt.Sprintf("handlers: handler %q registered twice", name))
	}
	registry[name] = f
}

// Lookup resolves a spec such as "pressEnter" or "select:2". The argument is
// everything after the first colon, so "type:a:b" types "a:b".
func Lookup(spec string) (Func, error) {
	name, arg, _ := strings.Cut(spec, ":")
	mu.RLock()
	f, ok := registry[name]
	mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("unknown handler %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	fn, err := f(arg)
	if err != nil {
		return nil, fmt.Errorf("handler %q: %w", spec, err)
	}
	return fn, nil
}

// Names returns the registered handler names, sorted.
func Names() []string {
	mu.RLock()
	defer mu.RUnlock()
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// keys makes a factory for a handler that takes no argument and always
// sends the same keys. An argument is refused so a typo such as
// "pressEnter:2" is caught when the adapter file loads.
func keys(k, description string) Factory {
	return func(arg string) (Func, error) {
		if arg != "" {
			return nil, fmt.Errorf("takes no argument, got %q", arg)
		}
		return func(Context) *Action { return &Action{Keys: k, Description: description} }, nil
	}
}

func selectOption(arg string) (Func, error) {
	// Agent menus (Claude Code, Gemini CLI) select an option as soon as its
	// digit is typed, so only one digit is meaningful.
	n, err := strconv.Atoi(arg)
	if err != nil || n < 1 || n > 9 || len(arg) != 1 {
		return nil, fmt.Errorf("want an option number 1..9, got %q", arg)
	}
	a := Action{Keys: arg, Description: "select option " + arg}
	return func(Context) *Action { c := a; return &c }, nil
}

// chooseOption is choose:LABEL, the same as an adapter handler's
// `choose: LABEL`.
func chooseOption(arg string) (Func, error) {
	if err := ValidLabel(arg); err != nil {
		return nil, err
	}
	a := Action{Choose: arg, Description: fmt.Sprintf("choose %q", arg)}
	return func(Context) *Action { c := a; return &c }, nil
}

// ValidLabel checks a menu label to choose: one line of text.
func ValidLabel(label string) error {
	switch {
	case strings.TrimSpace(label) == "":
		return fmt.Errorf("want the label of a menu option, as choose:LABEL")
	case strings.ContainsAny(label, "\r\n"):
		return fmt.Errorf("a menu label is one line, got %q", label)
	case strings.TrimSpace(label) != label:
		return fmt.Errorf("a menu label has no leading or trailing spaces, got %q", label)
	}
	return nil
}

func typeText(arg string) (Func, error) {
	if arg == "" {
		return nil, fmt.Errorf("want text to type, as type:TEXT")
	}
	a := Action{Keys: arg + "\r", Description: fmt.Sprintf("type %q and press Enter", arg)}
	return func(Context) *Action { c := a; return &c }, nil
}

func init() {
	Register("pressEnter", keys("\r", "press Enter"))
	Register("confirmYes", keys("y", "answer yes"))
	Register("confirmNo", keys("n", "answer no"))
	Register("pressEscape", keys("\x1b", "press Escape"))
	Register("arrowUp", keys("\x1b[A", "press Up"))
	Register("arrowDown", keys("\x1b[B", "press Down"))
	Register("pressTab", keys("\t", "press Tab"))
	Register("select", selectOption)
	Register("type", typeText)
	Register("choose", chooseOption)
}
