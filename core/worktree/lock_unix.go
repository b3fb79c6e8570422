//go:build unix

package worktree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockFile takes an exclusive flock(2) on path, waiting for it until ctx
// is done. flock belongs to the open file, so two goroutines of one process
// exclude each other as two processes do; the kernel drops it when the
// process dies, so a crash never leaves the repository locked.
func lockFile(ctx context.Context, path string) (func(), *os.File, error) {
	return lockFileWaiting(ctx, path, nil)
}

// lockFileWaiting is lockFile, calling waiting (when not nil) when the
// lock is held by another and it waits.
func lockFileWaiting(ctx context.Context, path string, waiting func()) (func(), *os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("open the lock %s: %w", path, err)
	}
	flock := func(how int) error {
		for {
			err := syscall.Flock(int(f.Fd()), how)
			if !errors.Is(err, syscall.EINTR) {
				return err
			}
		}
	}
	if err := flock(syscall.LOCK_EX | syscall.LOCK_NB); err == nil {
		return func() { f.Close() }, f, nil
	} else if !errors.Is(err, syscall.EWOULDBLOCK) {
		f.Close()
		return nil, nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if waiting != nil {
		waiting()
	}
	// Held by another run: wait in the background, so that a cancelled
	// context stops the wait (the lock, if it comes, is then let go).
	done := make(chan error, 1)
	go func() { done <- flock(syscall.LOCK_EX) }()
	select {
	case err := <-done:
		if err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("lock %s: %w", path, err)
		}
		return func() { f.Close() }, f, nil
	case <-ctx.Done():
		go func() {
			<-done
			f.Close()
		}()
		return nil, nil, fmt.Errorf("wait for the lock %s: %w", path, ctx.Err())
	}
}

// tryLockFile takes the flock on path if nobody holds it, without
// waiting; ok is false when another holds it.
func tryLockFile(path string) (unlock func(), ok bool, err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, false, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	switch {
	case err == nil:
		return func() { f.Close() }, true, nil
	case errors.Is(err, syscall.EWOULDBLOCK):
		f.Close()
		return nil, false, nil
	}
	f.Close()
	return nil, false, err
}
