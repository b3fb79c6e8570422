package state

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/vibeteam/vibeteam/core/vocab"
)

// chmod is a variable so tests can make tightening fail.
var chmod = os.Chmod

// SecureDirs makes .vibeteam, sessions/ and logs/ private to the user:
// missing ones are created 0700, and existing ones that others may enter are
// set to 0700. Checkpoints and logs hold prompts and agent output, and a
// .vibeteam others can write lets them swap in adapters, so a folder made
// 0777 by a permissive umask must not stay that way.
//
// Folders that cannot be tightened (owned by someone else, read-only file
// system) are not fatal: the returned error names each, to be shown as a
// warning.
func (m *Manager) SecureDirs() error {
	if err := m.CheckPlace(); err != nil {
		return err
	}
	var errs []error
	for _, dir := range []string{m.root, m.sessionsDir(), m.logsDir()} {
		info, err := os.Stat(dir)
		if errors.Is(err, os.ErrNotExist) {
			if err := os.MkdirAll(dir, dirMode); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		perm := info.Mode().Perm()
		if !info.IsDir() || perm&^dirMode == 0 {
			continue
		}
		if err := chmod(dir, dirMode); err != nil {
			if pe, ok := errors.AsType[*fs.PathError](err); ok {
				err = pe.Err // the path is in the message already
			}
			errs = append(errs, fmt.Errorf("%s is mode %#o, open to other users, and could not be made 0700: %w", dir, perm, err))
		}
	}
	return errors.Join(errs...)
}

// SymlinkError is a folder of vibeteam's that is a symbolic link.
type SymlinkError struct{ Path, Target string }

// Code is usage (exit 2): the person makes it a directory.
func (e *SymlinkError) Code() int { return vocab.ExitUsage }

func (e *SymlinkError) Error() string {
	return fmt.Sprintf("%s is a symbolic link (to %s): vibeteam does not work through one, since it deletes and chmods what it keeps there; make it a directory", e.Path, e.Target)
}

// CheckPlace refuses a sessions or logs folder that is a symbolic link:
// pruning deletes files there and SecureDirs changes its mode, which must
// never reach a folder vibeteam did not make.
func (m *Manager) CheckPlace() error {
	for _, dir := range []string{m.sessionsDir(), m.logsDir()} {
		info, err := os.Lstat(dir)
		if err != nil || info.Mode()&fs.ModeSymlink == 0 {
			continue
		}
		target, _ := os.Readlink(dir)
		return &SymlinkError{Path: dir, Target: target}
	}
	return nil
}
