package relay

import (
	"net/url"
	"path/filepath"

	"github.com/xdsengine/xdsengine/engine/storage"
	"github.com/xdsengine/xdsengine/lastgood"
)

// StoreDir is a Config.Store that keeps each key's last-known-good
// configuration in a file of dir (package lastgood), named after the key:
// "key=" and the key, escaped as a URL path segment, then ".lastgood"
// (with the lock file lastgood keeps beside it). The directory is created
// if need be, and must not be writable by others.
func StoreDir(dir string, opts lastgood.Options) func(key string) (storage.Store, error) {
	return func(key string) (storage.Store, error) {
		return lastgood.Open(filepath.Join(dir, "key="+url.PathEscape(key)+".lastgood"), opts)
	}
}
