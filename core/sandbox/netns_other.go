//go:build !linux

package sandbox

import (
	"errors"
	"os"
)

// startIn: network namespaces are Linux's, and a plan has one only there.
func startIn(*os.File, func() error) error {
	return errors.New("sandbox: network namespaces are Linux-only")
}
