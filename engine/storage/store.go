package storage

import "time"

// Store keeps the resources an engine accepted.
type Store interface {
	// Load returns what the store holds for digest: a store written for
	// another digest (another node, another bootstrap) returns nothing,
	// and is replaced as the engine writes. Resources that cannot be read
	// back whole are left out and counted in Corrupt.
	Load(digest []byte) (Loaded, error)
	// Apply writes a change set atomically: the resources to keep, and
	// those to forget (Delete). A crash during Apply leaves the store as
	// it was before it, or as after it.
	Apply(digest []byte, changes []Change) error
	// Close releases the store.
	Close() error
}

// Loaded is what a Store held.
type Loaded struct {
	Resources []Resource
	// Corrupt counts the resources, or the changes, left out because
	// their bytes did not check out.
	Corrupt int
}

// Resource is one resource an engine accepted, as a Store keeps it: the
// bytes, never a decoded value, which the registry of the day decodes
// and validates again when the resource is served.
type Resource struct {
	// Authority is the resource's authority (gRFC A47); "" for names that
	// are not xdstp:// URIs.
	Authority string
	// Server is the URI of the server that sent it.
	Server        string
	TypeURL, Name string
	Version       string
	Raw           []byte
	// Received is when the engine accepted these bytes (or, at most a
	// quarter of engine.Config.StoreMaxAge ago, the server sent them
	// again).
	Received time.Time
	// Expires is when the ttl the server sent the resource with runs
	// out; zero when it sent none. It is not served after.
	Expires time.Time
}

// Change is one change of a change set: a resource to keep, or with
// Delete, one to forget (only its key, Authority, TypeURL and Name, is
// read).
type Change struct {
	Resource
	Delete bool
}
