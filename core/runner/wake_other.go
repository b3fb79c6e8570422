//go:build !linux

package runner

// Wake ends a WatchHere from another goroutine. Here there is nothing to
// poll it with, and WatchHere declines it.
type Wake struct{}

// NewWake makes a wake.
func NewWake() *Wake { return &Wake{} }

// Fire does nothing: no WatchHere polls a wake here.
func (w *Wake) Fire() {}

// Close does nothing.
func (w *Wake) Close() {}

func (w *Wake) pollable() int { return -1 }
