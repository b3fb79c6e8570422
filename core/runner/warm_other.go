//go:build !linux

package runner

import (
	"errors"
	"os"
)

// There are no hosts where there is no bubblewrap: Warmer.start never
// gets this far (pidfdWatch is false).

var errNoHosts = errors.New("no kept sandboxes on this system")

func makeHost(shape, Spec) (*boxHost, error) { return nil, errNoHosts }

func (b *boxHost) run(boxRequest, *os.File, int, int) (int, int, error) { return 0, -1, errNoHosts }

func (b *boxHost) exited() Result { return Result{ExitCode: -1, Err: errNoHosts} }

func (b *boxHost) ended() bool { return true }

func (b *boxHost) discard() {}
