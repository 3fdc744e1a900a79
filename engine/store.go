package engine

import "time"

// Store keeps what the engine accepted, so that a process that starts
// (or watches something) while every server of an authority is
// unreachable starts from the last good configuration instead of none
// (Config.Store; package lastgood has a file-backed one). The engine
// calls it from one goroutine of its own, never on a response's path,
// and never two calls at once.
type Store interface {
	// Load returns what the store holds for digest: a store written for
	// another digest (another node, another bootstrap) returns nothing,
	// and is replaced as the engine writes. Resources that cannot be read
	// back whole are left out and counted in Corrupt.
	Load(digest []byte) (Loaded, error)
	// Apply writes a change set atomically: the resources to keep, and
	// those to forget (Delete). A crash during Apply leaves the store as
	// it was before it, or as after it.
	Apply(digest []byte, changes []StoreChange) error
	// Close releases the store.
	Close() error
}

// Loaded is what a Store held.
type Loaded struct {
	Resources []StoredResource
	// Corrupt counts the resources left out because their bytes did not
	// check out.
	Corrupt int
}

// StoredResource is one resource the engine accepted, as a Store keeps
// it: the bytes, never a decoded value, which the registry of the day
// decodes and validates again when the resource is served.
type StoredResource struct {
	// Authority is the resource's authority (A47); "" for names that are
	// not xdstp:// URIs.
	Authority string
	// Server is the URI of the server that sent it.
	Server        string
	TypeURL, Name string
	Version       string
	Raw           []byte
	// Received is when the engine accepted these bytes.
	Received time.Time
}

// StoreChange is one change of a change set: a resource to keep, or with
// Delete, one to forget (only its key, Authority, TypeURL and Name, is
// read).
type StoreChange struct {
	StoredResource
	Delete bool
}
