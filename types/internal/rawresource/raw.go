package rawresource

import (
	"google.golang.org/protobuf/proto"

	"github.com/xdsengine/xdsengine/registry"
)

// Proto is the Proto method of a resource type whose message is an M:
// a new M unmarshaled from raw, the bytes the resource was decoded from,
// which the caller may modify.
func Proto[M any, PM interface {
	*M
	proto.Message
}](raw []byte) proto.Message {
	m := PM(new(M))
	// The bytes were unmarshaled once already, when the resource was
	// decoded: a second time cannot fail.
	_ = proto.Unmarshal(raw, m)
	return m
}

// Equal is the Equal method ([registry.Equaler]) of a resource type R:
// other must be an *R too, and same must hold of the two (the same bytes,
// and whatever else the type compares). A nil *R equals only a nil *R.
func Equal[R any](r *R, other registry.Resource, same func(a, b *R) bool) bool {
	o, ok := other.(*R)
	if !ok || r == nil || o == nil {
		return ok && r == o
	}
	return same(r, o)
}
