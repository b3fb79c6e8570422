//go:build !unix

package worktree

import (
	"context"
	"fmt"
	"os"
	"sync"
)

// Without flock(2) the lock only excludes the runs of this process.
var (
	locksMu sync.Mutex
	locks   = map[string]chan struct{}{}
)

// lockChan is path's lock: a channel that holds one token while taken.
func lockChan(path string) chan struct{} {
	locksMu.Lock()
	defer locksMu.Unlock()
	ch, ok := locks[path]
	if !ok {
		ch = make(chan struct{}, 1)
		locks[path] = ch
	}
	return ch
}

func lockFile(ctx context.Context, path string) (func(), *os.File, error) {
	return lockFileWaiting(ctx, path, nil)
}

func lockFileWaiting(ctx context.Context, path string, waiting func()) (func(), *os.File, error) {
	ch := lockChan(path)
	select {
	case ch <- struct{}{}:
		return func() { <-ch }, nil, nil
	default:
	}
	if waiting != nil {
		waiting()
	}
	select {
	case ch <- struct{}{}:
		return func() { <-ch }, nil, nil
	case <-ctx.Done():
		return nil, nil, fmt.Errorf("wait for the lock %s: %w", path, ctx.Err())
	}
}

func tryLockFile(path string) (func(), bool, error) {
	ch := lockChan(path)
	select {
	case ch <- struct{}{}:
		return func() { <-ch }, true, nil
	default:
		return nil, false, nil
	}
}
