package registry

// GlobCollection is what a watch of an xdstp:// glob collection name
// ("xdstp://authority/type/path/*", xRFC TP1) delivers: the resources the
// server has under that path, each decoded and validated by the type the
// collection is watched as. The engine assembles it from the members the
// server sends and removes; removals are explicit only over incremental
// (delta) xDS, so a glob collection belongs on a delta server. It must not
// be modified.
type GlobCollection struct {
	// Name is the collection's name, ending in "/*".
	Name string
	// Members are the collection's resources, sorted by name.
	Members []GlobMember
}

// GlobMember is one resource of a [GlobCollection].
type GlobMember struct {
	Name     string
	Resource Resource
}
