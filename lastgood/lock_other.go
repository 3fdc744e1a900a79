//go:build !(linux || android || darwin || ios || freebsd || netbsd || openbsd || dragonfly)

package lastgood

import (
	"errors"
	"io/fs"
	"os"
)

// canWrite is false where this package does not lock files or make
// renames durable: only Options.ReadOnly works.
const canWrite = false

func tryLock(*os.File) (bool, error) {
	return false, errors.ErrUnsupported
}

func ownerOf(fs.FileInfo) (int, bool) { return 0, false }
