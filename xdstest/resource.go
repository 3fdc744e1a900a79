package xdstest

import (
	"fmt"
	"time"

	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"google.golang.org/protobuf/proto"
)

// Resource is one resource to serve.
//
// The zero TypeURL means "the type URL of Message"
// (type.googleapis.com/ + the message's full name). Set TypeURL, usually
// with [Resource.As], to serve a payload under another type URL: a custom
// type such as type.googleapis.com/example.custom.v1.Thing carried in a
// structpb.Struct, or a deliberately mismatched payload to provoke a NACK.
// On the wire the Any's type_url is always the subscribed type URL.
type Resource struct {
	// TypeURL is the type URL the resource is served under; empty means
	// the type URL of Message.
	TypeURL string
	// Name is the resource name the client subscribes to. It is not read
	// from Message: the harness never guesses names.
	Name string
	// Message is the payload. It must not be modified after Set or Update.
	Message proto.Message
	// Wrap sends the resource inside an envoy.service.discovery.v3.Resource
	// whose name is Name and whose resource is the payload's Any. SotW
	// clients need this for types without a name field, such as
	// envoy.config.endpoint.v3.LbEndpointCollection (LEDS).
	Wrap bool
}

// R returns a plain resource served under the type URL of msg.
func R(name string, msg proto.Message) Resource {
	return Resource{Name: name, Message: msg}
}

// Wrapped returns a resource served under the type URL of msg inside a
// named envoy.service.discovery.v3.Resource wrapper.
func Wrapped(name string, msg proto.Message) Resource {
	return Resource{Name: name, Message: msg, Wrap: true}
}

// As returns a copy of r served under typeURL.
func (r Resource) As(typeURL string) Resource {
	r.TypeURL = typeURL
	return r
}

// typeURL returns the type URL r is served under.
func (r Resource) typeURL() string {
	if r.TypeURL != "" {
		return r.TypeURL
	}
	return typeURLOf(r.Message)
}

// typeURLOf returns the canonical type URL of msg.
func typeURLOf(msg proto.Message) string {
	return "type.googleapis.com/" + string(msg.ProtoReflect().Descriptor().FullName())
}

// wrapTTL is the TTL given to wrapped resources. go-control-plane builds an
// envoy.service.discovery.v3.Resource wrapper only for resources that have a
// TTL (cache.go, marshalTTLResource), so a TTL is the switch that turns
// wrapping on. Its value never reaches a client: the server strips it again
// before sending (see unwrapHarness). The plain SnapshotCache sends no
// heartbeats, so the value has no other effect.
const wrapTTL = time.Hour

// errorTTL marks the placeholder resources by which SetResourceErrors
// passes xRFC TP3 errors through go-control-plane, which knows nothing of
// them: a google.rpc.Status "resource" with the errored resource's name,
// wrapped (hence a TTL), whose TTL is this value, which no resource of
// the harness has. The response callback turns each into a
// resource_errors entry (unwrapHarness). Going through the cache, an
// error is sent exactly when the resource would have been: to the
// streams that subscribe to it, once per version, and never in the same
// response as the resource.
const errorTTL = wrapTTL + time.Second

// named gives a message the name that go-control-plane copies into the
// wrapper's name field: its TTL path takes the name from GetName
// (types.ResourceWithName). Embedding proto.Message keeps ProtoReflect, so
// the payload marshals exactly as the inner message.
type named struct {
	proto.Message
	name string
}

// GetName returns the resource name.
func (n named) GetName() string { return n.name }

// typeState is the immutable state of one type URL within a snapshot.
type typeState struct {
	version   string
	resources map[string]types.ResourceWithTTL
}

// snapshot is an immutable cache.ResourceSnapshot for arbitrary type URLs.
//
// go-control-plane's own cache.Snapshot rejects type URLs it does not know
// (LbEndpointCollection, custom types); SnapshotCache itself only talks to
// this interface, so a map keyed by type URL serves anything. Each type has
// its own version, so an Update of one type does not re-send the others.
type snapshot struct {
	// base is the version of every type that types does not list: the
	// version of the last Set, or "" before the first Set (a type with
	// version "" and no resources gets no response at all).
	base  string
	types map[string]*typeState
}

var _ cache.ResourceSnapshot = (*snapshot)(nil)

// GetVersion returns the version of typeURL.
func (s *snapshot) GetVersion(typeURL string) string {
	if ts, ok := s.types[typeURL]; ok {
		return ts.version
	}
	return s.base
}

// GetResourcesAndTTL returns the resources of typeURL. The map is shared
// and must not be modified; SnapshotCache only reads it.
func (s *snapshot) GetResourcesAndTTL(typeURL string) map[string]types.ResourceWithTTL {
	if ts, ok := s.types[typeURL]; ok {
		return ts.resources
	}
	return nil
}

// GetResources returns the resources of typeURL without TTLs.
func (s *snapshot) GetResources(typeURL string) map[string]types.Resource {
	ts, ok := s.types[typeURL]
	if !ok {
		return nil
	}
	out := make(map[string]types.Resource, len(ts.resources))
	for name, r := range ts.resources {
		out[name] = r.Resource
	}
	return out
}

// ConstructVersionMap does nothing: GetVersionMap computes on demand.
func (s *snapshot) ConstructVersionMap() error { return nil }

// GetVersionMap returns per-resource versions for delta xDS: a hash of the
// serialized resource, as go-control-plane's own Snapshot does. Only delta
// streams use it; the harness targets SotW but need not break delta.
func (s *snapshot) GetVersionMap(typeURL string) map[string]string {
	ts, ok := s.types[typeURL]
	if !ok {
		return nil
	}
	out := make(map[string]string, len(ts.resources))
	for name, r := range ts.resources {
		b, err := cache.MarshalResource(r.Resource)
		if err != nil {
			continue
		}
		out[name] = cache.HashResource(b)
	}
	return out
}

// groupByType validates resources and groups them by type URL, in the form
// the snapshot stores. It panics on a programming error in the test
// (missing name or message, duplicate name, wrong type URL for Update).
func groupByType(server, wantTypeURL string, resources []Resource) map[string]map[string]types.ResourceWithTTL {
	out := make(map[string]map[string]types.ResourceWithTTL)
	for i, r := range resources {
		if r.Message == nil {
			panic(fmt.Sprintf("xdstest %s: resource %d (%q) has no Message", server, i, r.Name))
		}
		if r.Name == "" {
			panic(fmt.Sprintf("xdstest %s: resource %d (%s) has no Name", server, i, typeURLOf(r.Message)))
		}
		tu := r.typeURL()
		if wantTypeURL != "" && r.TypeURL != "" && tu != wantTypeURL {
			panic(fmt.Sprintf("xdstest %s: Update(%s) got resource %q with TypeURL %s", server, wantTypeURL, r.Name, tu))
		}
		if wantTypeURL != "" {
			// Update names the type; a resource without TypeURL is served
			// under it whatever its message type.
			tu = wantTypeURL
		}
		m := out[tu]
		if m == nil {
			m = make(map[string]types.ResourceWithTTL)
			out[tu] = m
		}
		if _, dup := m[r.Name]; dup {
			panic(fmt.Sprintf("xdstest %s: duplicate resource %q of type %s", server, r.Name, tu))
		}
		if r.Wrap {
			ttl := wrapTTL
			m[r.Name] = types.ResourceWithTTL{Resource: named{Message: r.Message, name: r.Name}, TTL: &ttl}
		} else {
			m[r.Name] = types.ResourceWithTTL{Resource: r.Message}
		}
	}
	return out
}
