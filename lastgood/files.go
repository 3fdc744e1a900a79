package lastgood

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

const (
	dirMode  fs.FileMode = 0o700
	fileMode fs.FileMode = 0o600

	lockSuffix    = ".lock"
	tempInfix     = ".tmp-"
	corruptSuffix = ".corrupt-"
)

// ensureDir creates the store's directory, 0700, if it is missing, and
// otherwise checks that it is this user's and that nobody else can write
// to it. Others may list it (0755, say), as ssh's StrictModes allows for
// a home directory: the names of the files are no secret, their content
// is 0600.
func ensureDir(dir string) error {
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, dirMode); err != nil {
			return fmt.Errorf("lastgood: creating the store's directory: %w", err)
		}
		fi, err = os.Stat(dir)
	}
	if err != nil {
		return fmt.Errorf("lastgood: the store's directory: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("lastgood: %s is not a directory", dir)
	}
	if extra := fi.Mode().Perm() & 0o022; extra != 0 {
		return fmt.Errorf("lastgood: the store's directory %s has mode %04o, which lets others write to it (%04o), and so replace the store: run chmod go-w %s, or give the store a directory of its own: %w",
			dir, fi.Mode().Perm(), extra, dir, fs.ErrPermission)
	}
	return checkOwner(dir, fi, "directory")
}

// checkFile checks an existing store file: a regular file (not a
// symbolic link, which the store would replace by rename), of this user,
// that nobody else can read or write, as ssh wants of a private key.
func checkFile(path string, fi fs.FileInfo) error {
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("lastgood: %s is not a regular file (mode %s); the store must be one", path, fi.Mode())
	}
	if extra := fi.Mode().Perm() &^ fileMode; extra != 0 {
		return fmt.Errorf("lastgood: the store file %s has mode %04o, which lets others in (%04o); want %04o: run chmod 600 %s: %w",
			path, fi.Mode().Perm(), extra, fileMode, path, fs.ErrPermission)
	}
	return checkOwner(path, fi, "file")
}

// checkOwner refuses a file or directory of another user, who could
// replace the store with another configuration.
func checkOwner(path string, fi fs.FileInfo, what string) error {
	if uid, ok := ownerOf(fi); ok && uid != os.Geteuid() {
		return fmt.Errorf("lastgood: the store's %s %s belongs to user %d, not to this process's user %d: %w",
			what, path, uid, os.Geteuid(), fs.ErrPermission)
	}
	return nil
}

// removeTemps removes the temporary files a rewrite interrupted by a
// crash left; the caller holds the lock, so no rewrite is under way.
func removeTemps(path string) error {
	dir, base := filepath.Split(path)
	list, err := os.ReadDir(filepath.Clean(dir))
	if err != nil {
		return err
	}
	for _, d := range list {
		if strings.HasPrefix(d.Name(), base+tempInfix) && d.Type().IsRegular() {
			if err := os.Remove(filepath.Join(dir, d.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	return nil
}

// moveAside renames a store that cannot be read to
// PATH.corrupt-TIMESTAMP, keeping its mode, so that it can be looked at,
// and returns the new name.
func moveAside(path string, now time.Time) (string, error) {
	base := path + corruptSuffix + now.UTC().Format("20060102T150405Z")
	name := base
	for i := 1; ; i++ {
		if _, err := os.Lstat(name); errors.Is(err, fs.ErrNotExist) {
			break
		}
		name = fmt.Sprintf("%s-%d", base, i)
	}
	if err := os.Rename(path, name); err != nil {
		return "", fmt.Errorf("lastgood: moving the unreadable store aside: %w", err)
	}
	return name, syncDir(filepath.Dir(path))
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
