//go:build e2e && race

package e2e

// raceEnabled: the tests run under -race, so vibeteam is built with it too.
const raceEnabled = true
