package cli

import "github.com/vibeteam/vibeteam/core/beads"

// readBeadFile reads --bead-file (beads.ReadFile).
func readBeadFile(path string) (map[string]any, error) { return beads.ReadFile(path) }
