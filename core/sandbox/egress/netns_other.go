//go:build !linux

package egress

import (
	"net"
	"os"
)

// listenInNewNetns: network namespaces are Linux's.
func listenInNewNetns(string) (net.Listener, *os.File, error) {
	return nil, nil, ErrNoNetns
}
