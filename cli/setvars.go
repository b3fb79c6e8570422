package cli

import (
	"fmt"
	"io"
	"os"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/vibeteam/vibeteam/core/render"
	"github.com/vibeteam/vibeteam/core/state"
)

// secretSetFlags give a template variable its value out of vibeteam's own
// command line, which any user of the machine can read (ps): from an
// environment variable, or from a file.
func secretSetFlags() []ucli.Flag {
	return []ucli.Flag{
		&ucli.StringSliceFlag{Name: "set-env", Usage: "template variable `NAME` (or key=NAME) from the environment variable NAME, as --set gives it but never in the command line (ps shows --set values); a secret: written and printed as *** (repeatable)"},
		&ucli.StringSliceFlag{Name: "set-file", Usage: "template variable `key=PATH` from the file's content (without its final newline), never in the command line; a secret: written and printed as *** (repeatable)"},
	}
}

// templateVars are the variables of --set, --set-env and --set-file (the
// last given wins); secret names those of the last two, which are secrets
// whatever their name. Their values are redacted from here on.
func templateVars(c *ucli.Context) (vars map[string]string, secret []string, err error) {
	vars, err = render.ParseSets(c.StringSlice("set"))
	if err != nil {
		return nil, nil, err
	}
	var values []string
	for _, s := range c.StringSlice("set-env") {
		key, name, ok := strings.Cut(s, "=")
		if !ok {
			name = key
		}
		key, name = strings.TrimSpace(key), strings.TrimSpace(name)
		if key == "" || name == "" {
			return nil, nil, exitf(ExitUsage, "--set-env %q: expected NAME or key=NAME", s)
		}
		v, set := os.LookupEnv(name)
		if !set {
			return nil, nil, exitf(ExitUsage, "--set-env %s: the environment variable %s is not set", s, name)
		}
		vars[key], secret, values = v, append(secret, key), append(values, v)
	}
	for _, s := range c.StringSlice("set-file") {
		key, path, ok := strings.Cut(s, "=")
		key = strings.TrimSpace(key)
		if !ok || key == "" || path == "" {
			return nil, nil, exitf(ExitUsage, "--set-file %q: expected key=PATH", s)
		}
		b, err := readVarFile(path)
		if err != nil {
			return nil, nil, exitf(ExitUsage, "--set-file %s: %v", key, err)
		}
		v := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
		vars[key], secret, values = v, append(secret, key), append(values, v)
	}
	state.AddSecrets(values)
	return vars, secret, nil
}

// maxVarFile bounds a --set-file: a secret, not a data set.
const maxVarFile = 1 << 20

// readVarFile reads a regular file of at most maxVarFile bytes: never a
// FIFO that blocks, nor a device that never ends.
func readVarFile(path string) ([]byte, error) {
	// Stat first: opening a FIFO would wait for a writer.
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxVarFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxVarFile {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, maxVarFile)
	}
	return b, nil
}

// secretVarNames are the variables --set-env and --set-file name.
func secretVarNames(c *ucli.Context) []string {
	var names []string
	for _, s := range c.StringSlice("set-env") {
		key, _, _ := strings.Cut(s, "=")
		names = append(names, strings.TrimSpace(key))
	}
	for _, s := range c.StringSlice("set-file") {
		key, _, _ := strings.Cut(s, "=")
		names = append(names, strings.TrimSpace(key))
	}
	return names
}
