//go:build linux || android || darwin || ios || freebsd || netbsd || openbsd || dragonfly

package lastgood

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// canWrite reports that this system has what a writer needs: flock(2)
// and durable renames.
const canWrite = true

// tryLock takes an exclusive flock(2) on f without waiting. The lock
// belongs to the open file, so a second Open in the same process
// conflicts with the first as another process would, and the kernel
// drops it when the process dies.
func tryLock(f *os.File) (bool, error) {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, syscall.EWOULDBLOCK):
			return false, nil
		case errors.Is(err, syscall.EINTR):
			continue
		default:
			return false, err
		}
	}
}

// ownerOf returns the user who owns a file.
func ownerOf(fi fs.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}
