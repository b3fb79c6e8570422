package render

import (
	"fmt"
	"strings"
	"text/template"

	sprig "github.com/go-task/slim-sprig/v3"
)

// Template functions. Every template (spells, partials, inputs, when,
// script commands, stage prompts) has the hermetic functions of
// slim-sprig (github.com/go-task/slim-sprig, the set go-task uses): those of
// coven's renderer (default, join, upper, lower, trim, indent, quote) and the
// rest of sprig's string, list, dict, math and regexp functions
// (https://go-task.github.io/slim-sprig/). Hermetic: a template renders the
// same text from the same scope, so nothing reads the environment, the
// network, the clock or a random source. Our own functions (raw, step,
// include) come on top.

// sprigLeftOut are the functions of sprig's hermetic set that are not
// offered: those that read the clock or a random source anyway (ago,
// randInt), the greeting, and those that change a map in place (set, unset,
// merge...), which would change the scope itself: a step result or the
// bead, for the templates rendered after.
var sprigLeftOut = []string{
	"hello", "ago", "randInt",
	"set", "unset", "merge", "mustMerge", "mergeOverwrite", "mustMergeOverwrite",
}

// maxListLen bounds the lists until, untilStep and seq make.
const maxListLen = 1 << 20

var sprigFuncs = func() template.FuncMap {
	fm := sprig.HermeticTxtFuncMap()
	for _, name := range sprigLeftOut {
		delete(fm, name)
	}
	// The functions whose result can be far larger than their arguments
	// are bounded, so that a template cannot exhaust the machine before
	// the output limit sees the text.
	fm["repeat"] = func(count int, s string) (string, error) {
		if count < 0 {
			return "", &funcError{fmt.Sprintf("repeat %d: the count is negative", count)}
		}
		if len(s) > 0 && count > maxOutput/len(s) {
			return "", &funcError{fmt.Sprintf("repeat %d: the text would be larger than %d MiB", count, maxOutput>>20)}
		}
		return strings.Repeat(s, count), nil
	}
	indent := func(name string, lead string) func(int, string) (string, error) {
		return func(spaces int, s string) (string, error) {
			lines := strings.Count(s, "\n") + 1
			if spaces < 0 {
				spaces = 0
			}
			if spaces > 0 && lines > maxOutput/spaces {
				return "", &funcError{fmt.Sprintf("%s %d: the text would be larger than %d MiB", name, spaces, maxOutput>>20)}
			}
			pad := strings.Repeat(" ", spaces)
			return lead + pad + strings.ReplaceAll(s, "\n", "\n"+pad), nil
		}
	}
	fm["indent"] = indent("indent", "")
	fm["nindent"] = indent("nindent", "\n")
	until, untilStep, seq := fm["until"].(func(int) []int), fm["untilStep"].(func(int, int, int) []int), fm["seq"].(func(...int) string)
	span := func(start, stop, step int) int {
		if step == 0 {
			return 0
		}
		n := (stop - start) / step
		if n < 0 {
			return 0
		}
		return n
	}
	tooLong := func(name string) error {
		return &funcError{fmt.Sprintf("%s: the list would have more than %d items", name, maxListLen)}
	}
	fm["until"] = func(count int) ([]int, error) {
		if count > maxListLen || count < -maxListLen {
			return nil, tooLong("until")
		}
		return until(count), nil
	}
	fm["untilStep"] = func(start, stop, step int) ([]int, error) {
		if span(start, stop, step) > maxListLen {
			return nil, tooLong("untilStep")
		}
		return untilStep(start, stop, step), nil
	}
	fm["seq"] = func(params ...int) (string, error) {
		var n int
		switch len(params) {
		case 1:
			n = params[0]
			if n < 0 {
				n = -n
			}
		case 2:
			n = params[1] - params[0]
			if n < 0 {
				n = -n
			}
		case 3:
			step := params[1]
			if step < 0 {
				step = -step
			}
			d := params[2] - params[0]
			if d < 0 {
				d = -d
			}
			n = span(0, d, max(step, 1))
		}
		if n > maxListLen {
			return "", tooLong("seq")
		}
		return seq(params...), nil
	}
	return fm
}()

// templateFuncs are the functions of every template: sprig's, then ours.
func templateFuncs(own template.FuncMap) template.FuncMap {
	fm := make(template.FuncMap, len(sprigFuncs)+len(own))
	for k, v := range sprigFuncs {
		fm[k] = v
	}
	for k, v := range own {
		fm[k] = v
	}
	return fm
}

// Funcs are the functions every template has besides vibeteam's own (raw,
// step, include), for a caller that parses a template to check it.
func Funcs() template.FuncMap { return templateFuncs(nil) }
