package cli

import (
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/vibeteam/vibeteam/schema"
)

func schemaCommand(streams IO) *ucli.Command {
	return &ucli.Command{
		Name:      "schema",
		Usage:     "print the JSON Schema of workflow or adapter files, for editors",
		ArgsUsage: "workflow|adapter",
		Description: `Prints a JSON Schema (draft-07) on stdout. Editors that use
yaml-language-server (VS Code's YAML extension, Neovim, Helix, ...) validate
and complete a file whose first line names it:

  vibeteam schema workflow > .vibeteam/workflow.schema.json
  # yaml-language-server: $schema=../workflow.schema.json

The schema checks structure; vibeteam validate checks everything else.`,
		Action: func(c *ucli.Context) error {
			names := strings.Join(schema.Names(), " or ")
			if c.NArg() != 1 {
				return exitf(ExitUsage, "schema needs one name: %s", names)
			}
			data, ok := schema.Get(c.Args().First())
			if !ok {
				return exitf(ExitUsage, "no schema %q (want %s)", c.Args().First(), names)
			}
			_, err := streams.Out.Write(data)
			return err
		},
	}
}
