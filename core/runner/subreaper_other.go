//go:build !linux

package runner

// BecomeSubreaper does nothing where there are no child subreapers.
func BecomeSubreaper() error { return nil }
