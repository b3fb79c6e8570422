// Package completioncmd is `vibeteam completion` and the hidden command
// its scripts call: what may come next on a command line being typed.
package completioncmd

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/vibeteam/vibeteam/builtin"
	"github.com/vibeteam/vibeteam/cli/cmdutil"
	"github.com/vibeteam/vibeteam/core/engine"
	"github.com/vibeteam/vibeteam/core/state"
)

// Command is the hidden command the completion scripts call with the
// words typed so far, the last one being the word under the cursor (maybe
// empty). It prints one candidate a line, optionally followed by a tab and a
// description (zsh and fish show it, bash drops it). All the knowledge is
// here, so the three scripts stay small and alike.
const Command = "__complete"

var shells = []string{"bash", "zsh", "fish"}

// Options are what `vibeteam completion` is asked.
type Options struct {
	IO    cmdutil.IO
	Shell string // bash, zsh or fish
}

// NewCmdCompletion is the `completion` command. Its action gathers the
// Options and hands them to runF (nil: Run).
func NewCmdCompletion(streams cmdutil.IO, runF func(*Options) error) *ucli.Command {
	if runF == nil {
		runF = Run
	}
	return &ucli.Command{
		Name:      "completion",
		Usage:     "print a shell completion script (commands, flags, workflow names and files, session ids)",
		ArgsUsage: "bash|zsh|fish",
		Description: `Load it in the current shell:

   bash:  source <(vibeteam completion bash)
   zsh:   source <(vibeteam completion zsh)     (after compinit)
   fish:  vibeteam completion fish | source

or install it for good:

   bash:  vibeteam completion bash > ~/.local/share/bash-completion/completions/vibeteam
   zsh:   vibeteam completion zsh > "${fpath[1]}/_vibeteam"
   fish:  vibeteam completion fish > ~/.config/fish/completions/vibeteam.fish`,
		Action: func(c *ucli.Context) error {
			if c.NArg() != 1 {
				return cmdutil.Exitf(cmdutil.ExitUsage, "completion needs one shell: %s; see vibeteam completion --help", strings.Join(shells, ", "))
			}
			return runF(&Options{IO: streams, Shell: c.Args().First()})
		},
	}
}

// Run prints the completion script of opts.Shell.
func Run(opts *Options) error {
	script := map[string]string{"bash": bashCompletion, "zsh": zshCompletion, "fish": fishCompletion}[opts.Shell]
	if script == "" {
		return cmdutil.Exitf(cmdutil.ExitUsage, "no completion for shell %q; there is %s", opts.Shell, strings.Join(shells, ", "))
	}
	_, err := fmt.Fprint(opts.IO.Out, script)
	return err
}

type candidate struct{ value, desc string }

// Complete prints what may come as the last of words, typed on a command
// line of app, one candidate a line (Command's protocol).
func Complete(streams cmdutil.IO, app *ucli.App, words []string) {
	if len(words) == 0 {
		words = []string{""}
	}
	app.Setup()
	cur := words[len(words)-1]
	prefix := cur
	if cur == "=" {
		// bash, on "--flag=": readline replaces only the text after
		// the "=", which is empty.
		prefix = ""
	}
	for _, c := range completions(app, words[:len(words)-1], cur) {
		if !strings.HasPrefix(c.value, prefix) {
			continue
		}
		if c.desc != "" {
			fmt.Fprintf(streams.Out, "%s\t%s\n", c.value, c.desc)
		} else {
			fmt.Fprintln(streams.Out, c.value)
		}
	}
}

// completions lists what may come as the word cur after the words before it.
// It follows the parsing rules of Main: flags of the command anywhere before
// "--", the command's flags after its name and the global ones before.
func completions(app *ucli.App, before []string, cur string) []candidate {
	// bash splits "--flag=value" into "--flag", "=", "value" (= is in
	// COMP_WORDBREAKS), and readline replaces only the text after the "=":
	// on "--flag=" the word under the cursor is "=", and the candidates
	// are the bare values (with the "=" in front, the line would read
	// "--flag==value").
	afterEquals := cur == "="
	if afterEquals {
		cur = ""
	}
	if n := len(before); n > 1 && before[n-1] == "=" && strings.HasPrefix(before[n-2], "-") {
		before = before[:n-1]
	}
	line, values, ok := parseLine(app, joinEquals(before), cur)
	switch {
	case !ok:
		return nil
	case values != nil:
		return values
	case afterEquals:
		return nil
	case strings.HasPrefix(cur, "-") && !line.dashdash:
		return flagCandidates(line.flags, cur)
	case line.cmd == nil:
		return commandCandidates(app)
	}
	if line.base == "" {
		line.base = os.Getenv("VIBETEAM_BASE_DIR")
	}
	return argCandidates(app, line, cur)
}

// typedLine is what the words before the cursor say: the command, its
// flags, how many arguments it has, whether "--" came, and --base-dir.
type typedLine struct {
	cmd      *ucli.Command
	flags    []ucli.Flag
	nargs    int
	dashdash bool
	base     string
}

// parseLine reads the words before the cursor as Main parses them. When
// the last of them is a flag that takes a value, values are the
// candidates for it; ok is false when a word is no command.
func parseLine(app *ucli.App, before []string, cur string) (line typedLine, values []candidate, ok bool) {
	line.flags = app.Flags
	for i := 0; i < len(before); i++ {
		w := before[i]
		if line.dashdash || w == "-" || !strings.HasPrefix(w, "-") {
			if line.cmd == nil {
				if line.cmd = app.Command(w); line.cmd == nil {
					return line, nil, false // not a command: nothing sensible follows
				}
				line.flags = line.cmd.Flags
				continue
			}
			line.nargs++
			continue
		}
		if w == "--" {
			line.dashdash = true
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(w, "-"), "=")
		if hasValue || !cmdutil.TakesValue(line.flags, w) {
			if name == "base-dir" {
				line.base = value
			}
			continue
		}
		if i+1 == len(before) {
			return line, nonNilCandidates(flagValues(name, cur, "")), true
		}
		i++
		if name == "base-dir" {
			line.base = before[i]
		}
	}
	return line, nil, true
}

// nonNilCandidates is c, empty rather than nil: the value of a flag that
// has no candidates is still the flag's value, not an argument.
func nonNilCandidates(c []candidate) []candidate {
	if c == nil {
		return []candidate{}
	}
	return c
}

// flagCandidates are the flags that may come as cur, or the values of
// the flag in cur's "--flag=".
func flagCandidates(flags []ucli.Flag, cur string) []candidate {
	if name, value, ok := strings.Cut(cur, "="); ok {
		if !cmdutil.TakesValue(flags, name) {
			return nil
		}
		return flagValues(strings.TrimLeft(name, "-"), value, name+"=")
	}
	var out []candidate
	for _, f := range flags {
		if !visible(f) {
			continue
		}
		for _, n := range f.Names() {
			out = append(out, candidate{cmdutil.Dashed(n), flagUsage(f)})
		}
	}
	return out
}

// argCandidates are the arguments the command may take as cur.
func argCandidates(app *ucli.App, line typedLine, cur string) []candidate {
	first := line.nargs == 0
	switch line.cmd.Name {
	case "run", "preview", "doctor":
		if first {
			return workflowCandidates(line.base, cur)
		}
	case "validate":
		return workflowCandidates(line.base, cur)
	case "show", "resume", "log", "report":
		if first {
			return sessionCandidates(line.base, line.cmd.Name == "resume")
		}
	case "help":
		if first {
			return commandCandidates(app)
		}
	case "completion":
		if first {
			return words(shells...)
		}
	case "schema":
		if first {
			return words("workflow", "adapter")
		}
	}
	return nil
}

// joinEquals undoes bash's splitting of "--flag=value" in the words before
// the cursor.
func joinEquals(words []string) []string {
	var out []string
	for i := 0; i < len(words); i++ {
		if words[i] == "=" && len(out) > 0 && strings.HasPrefix(out[len(out)-1], "-") && i+1 < len(words) {
			out[len(out)-1] += "=" + words[i+1]
			i++
			continue
		}
		out = append(out, words[i])
	}
	return out
}

func visible(f ucli.Flag) bool {
	vf, ok := f.(ucli.VisibleFlag)
	return !ok || vf.IsVisible()
}

func flagUsage(f ucli.Flag) string {
	if df, ok := f.(ucli.DocGenerationFlag); ok {
		return df.GetUsage()
	}
	return ""
}

// flagValues completes the value of flag name; prefix goes in front of each
// candidate (for the --flag=value form).
func flagValues(name, cur, prefix string) []candidate {
	var out []candidate
	switch name {
	case "base-dir":
		out = pathCandidates(cur, func(string) bool { return false })
	case "events":
		out = append(pathCandidates(cur, func(string) bool { return true }), candidate{"-", "stdout"})
	case "on-interaction":
		out = words(engine.InteractionAsk, engine.InteractionPark, engine.InteractionFail)
	}
	for i := range out {
		out[i].value = prefix + out[i].value
	}
	return out
}

func words(ws ...string) []candidate {
	out := make([]candidate, len(ws))
	for i, w := range ws {
		out[i].value = w
	}
	return out
}

func commandCandidates(app *ucli.App) []candidate {
	var out []candidate
	for _, c := range app.VisibleCommands() {
		out = append(out, candidate{c.Name, c.Usage})
	}
	return out
}

// workflowCandidates are what `run` accepts: named workflows of the project,
// built-in ones, and workflow files (with the folders leading to them).
func workflowCandidates(base, cur string) []candidate {
	var out []candidate
	if b, err := cmdutil.FindBaseDir(base); err == nil {
		entries, _ := os.ReadDir(filepath.Join(b, ".vibeteam", "workflows"))
		for _, e := range entries {
			if name, ok := workflowName(e.Name()); ok && !e.IsDir() {
				out = append(out, candidate{name, "workflow"})
			}
		}
	}
	for _, name := range builtin.WorkflowNames() {
		out = append(out, candidate{name, "built-in workflow"})
	}
	return append(out, pathCandidates(cur, func(name string) bool {
		_, ok := workflowName(name)
		return ok
	})...)
}

func workflowName(file string) (string, bool) {
	ext := filepath.Ext(file)
	if ext != ".yaml" && ext != ".yml" && ext != ".json" || strings.HasPrefix(file, ".") {
		return "", false
	}
	return strings.TrimSuffix(file, ext), true
}

// sessionCandidates lists session ids, newest first, with what they ran;
// for resume, not the completed ones, which it would refuse.
func sessionCandidates(base string, resumable bool) []candidate {
	b, err := cmdutil.FindBaseDir(base)
	if err != nil {
		return nil
	}
	list, _ := state.NewManager(b).List()
	var out []candidate
	for _, s := range list {
		if resumable && s.Status == state.StatusCompleted {
			continue
		}
		out = append(out, candidate{s.ID, fmt.Sprintf("%s, %s", s.Workflow, s.Status)})
	}
	return out
}

// pathCandidates completes cur as a path: folders (ending in /, to go on
// into) and the files keep accepts. Hidden entries only when asked for by a
// leading dot, as shells do.
func pathCandidates(cur string, keep func(name string) bool) []candidate {
	dir, prefix := filepath.Split(cur)
	entries, err := os.ReadDir(orDot(dir))
	if err != nil {
		return nil
	}
	var out []candidate
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, prefix) || strings.HasPrefix(name, ".") && !strings.HasPrefix(prefix, ".") {
			continue
		}
		isDir := e.IsDir()
		if e.Type()&os.ModeSymlink != 0 {
			if st, err := os.Stat(filepath.Join(orDot(dir), name)); err == nil {
				isDir = st.IsDir()
			}
		}
		switch {
		case isDir:
			out = append(out, candidate{value: dir + name + "/"})
		case keep(name):
			out = append(out, candidate{value: dir + name})
		}
	}
	slices.SortFunc(out, func(a, b candidate) int { return strings.Compare(a.value, b.value) })
	return out
}

func orDot(dir string) string {
	if dir == "" {
		return "."
	}
	return dir
}

const bashCompletion = `# bash completion for vibeteam
#   source <(vibeteam completion bash)
_vibeteam() {
    local line
    COMPREPLY=()
    while IFS= read -r line; do
        COMPREPLY+=("${line%%$'\t'*}")
    done < <("${COMP_WORDS[0]}" __complete "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null)
    # A folder is a step of a path: no space after it.
    if [[ ${#COMPREPLY[@]} -eq 1 && ${COMPREPLY[0]} == */ ]]; then
        compopt -o nospace 2>/dev/null
    fi
    return 0
}
complete -F _vibeteam vibeteam
`

const zshCompletion = `#compdef vibeteam
# zsh completion for vibeteam
#   source <(vibeteam completion zsh)
_vibeteam() {
    local line
    local -a described plain folders
    for line in "${(@f)$("${words[1]}" __complete "${(@)words[2,CURRENT]}" 2>/dev/null)}"; do
        if [[ $line == *$'\t'* ]]; then
            described+=("${${line%%$'\t'*}//:/\\:}:${line#*$'\t'}")
        elif [[ $line == */ ]]; then
            folders+=("$line")
        elif [[ -n $line ]]; then
            plain+=("$line")
        fi
    done
    (( ${#described} )) && _describe -t vibeteam vibeteam described
    (( ${#plain} )) && compadd -- "${plain[@]}"
    (( ${#folders} )) && compadd -S '' -- "${folders[@]}"
    return 0
}
if [[ $funcstack[1] == _vibeteam ]]; then
    _vibeteam "$@"
else
    compdef _vibeteam vibeteam
fi
`

const fishCompletion = `# fish completion for vibeteam
#   vibeteam completion fish | source
function __vibeteam_complete
    set -l words (commandline -opc)
    set -l prog $words[1]
    set -e words[1]
    set -l cur (commandline -ct)
    $prog __complete $words "$cur" 2>/dev/null
end
complete -c vibeteam -f -a '(__vibeteam_complete)'
`
