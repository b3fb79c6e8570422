//go:build !linux

package runner

import "time"

// waitGone: no sandbox here, nothing to wait for.
func waitGone(int, time.Duration) {}
