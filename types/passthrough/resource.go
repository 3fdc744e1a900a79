package passthrough

import (
	"bytes"
	"fmt"
	"slices"
	"sync"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/internal/rawresource"
)

// Resource is a decoded pass-through resource: its message as sent, and
// the bytes it was sent as. Like every resource it is shared by all the
// watchers of an engine and must not be modified, nor must the message
// and bytes it returns.
type Resource struct {
	typeURL string
	name    string
	msg     proto.Message
	raw     []byte
	dec     *decoder

	refsOnce sync.Once
	refs     []registry.Ref
}

// TypeURL returns the type URL of the resource's message.
func (r *Resource) TypeURL() string { return r.typeURL }

// Name returns the resource's name: its name field, or the name of the
// Resource wrapper it arrived in (see the package documentation).
func (r *Resource) Name() string { return r.name }

// Message returns the decoded message, such as a *clusterpb.Cluster for
// a Cluster. It is shared: read it, never modify it (use [Resource.Proto]
// for a copy to change).
func (r *Resource) Message() proto.Message { return r.msg }

// Raw returns the serialized resource exactly as the server sent it: the
// value of its Any. A relay writes these bytes into its own responses
// without marshaling the message again. They are shared and must not be
// modified.
func (r *Resource) Raw() []byte { return r.raw }

// Proto returns a copy of the message that the caller may modify.
func (r *Resource) Proto() proto.Message { return proto.Clone(r.msg) }

// Verbatim returns a proto.Message that marshals to exactly [Resource.Raw]
// and has a GetName method returning the resource's name: what
// go-control-plane's caches (LinearCache, SnapshotCache) take to serve
// the resource downstream byte for byte, without marshaling the decoded
// message again (once per resource and version, and in an order that may
// differ from the server's). Those caches take the type URL of their
// responses from the request and the name from GetName, so the message's
// own type does not show; it is google.protobuf.Empty carrying the bytes
// as unknown fields, which a program that inspects messages by type (such
// as go-control-plane's Snapshot.Consistent, or protojson) cannot read.
// Each call returns a new message; it must not be modified.
func (r *Resource) Verbatim() proto.Message {
	e := &emptypb.Empty{}
	// A full slice expression: a later append to the unknown fields
	// cannot write into the shared bytes.
	e.ProtoReflect().SetUnknown(r.raw[:len(r.raw):len(r.raw)])
	return verbatim{Empty: e, name: r.name}
}

// verbatim is Verbatim's message; go-control-plane reads its name through
// types.ResourceWithName.
type verbatim struct {
	*emptypb.Empty
	name string
}

// GetName returns the resource's name.
func (v verbatim) GetName() string { return v.name }

// Equal reports whether other is a *Resource of the same type and name
// that the server sent as the same bytes.
func (r *Resource) Equal(other registry.Resource) bool {
	return rawresource.Equal(r, other, func(a, b *Resource) bool {
		return a.typeURL == b.typeURL && a.name == b.name && bytes.Equal(a.raw, b.raw)
	})
}

// String names the resource's type and name, and its size.
func (r *Resource) String() string {
	return fmt.Sprintf("%s %q (%d bytes)", r.msg.ProtoReflect().Descriptor().Name(), r.name, len(r.raw))
}

// dependencies is the DependencyExtractor of the types that have one.
func dependencies(r registry.Resource) []registry.Ref {
	res, ok := r.(*Resource)
	if !ok || res == nil || res.dec == nil {
		return nil
	}
	res.refsOnce.Do(func() { res.refs = res.dec.refsOf(res.msg) })
	return slices.Clone(res.refs)
}

// Interface guards.
var _ registry.Equaler = (*Resource)(nil)
