package registry

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/internal/protoscan"
)

// Resource is a decoded, validated resource. It is immutable once a
// decoder returns it: the engine hands the same value to every watcher.
type Resource any

// Equaler is implemented by resources that know when two versions mean the
// same thing. Without it the engine compares serialized bytes.
type Equaler interface {
	Equal(other Resource) bool
}

// Composer is implemented by resources whose dependencies complete them,
// such as an EDS resource whose localities list their endpoints in LEDS
// collections. A dependency graph watch calls Compose once every
// dependency has resolved; lookup returns a dependency's resource. The
// result must be a new value: the receiver stays as decoded.
type Composer interface {
	Compose(lookup func(Ref) (Resource, bool)) (Resource, error)
}

// ResourceType describes one xDS resource type.
type ResourceType struct {
	// TypeURL is the type URL of the resource's message, e.g.
	// "type.googleapis.com/envoy.config.listener.v3.Listener".
	TypeURL string
	// Name is a short name for logs, errors and metrics, e.g. "Listener".
	// Empty means the last element of TypeURL.
	Name string
	// AllResourcesRequiredInSotW says that a SotW response carries every
	// subscribed resource of the type, so a resource missing from a
	// response has been deleted (LDS and CDS).
	AllResourcesRequiredInSotW bool
	// Decoder is required.
	Decoder Decoder
	// Validator is optional.
	Validator Validator
	// Dependencies is optional.
	Dependencies DependencyExtractor
	// NameField is optional: the number of the message's top-level string
	// field that holds the resource's name, such as 1 for Listener,
	// RouteConfiguration, Cluster and ClusterLoadAssignment. The engine
	// reads it from a resource that arrives without a Resource wrapper to
	// find the cached resource the bytes may repeat, and reuses that one,
	// undecoded, when the bytes are equal. It is a hint and never trusted
	// further: a wrong field only costs a decode. Zero means the type has
	// no such field; the engine then finds a repeated resource by a hash
	// of its bytes, which a large cache pays for in an index of them.
	// A field number is at most 2^29-1 (protowire.MaxValidNumber).
	NameField int32
	// ClientFeatures are the client features (node.client_features) the
	// engine advertises when this type is registered and enabled, e.g.
	// LEDS's "xds.endpoint.supports_lb_endpoint_collection".
	ClientFeatures []string
	// NotStored keeps the type's resources out of the engine's
	// last-known-good store (engine.Config.Store), which writes what it
	// keeps to disk in the clear: for types whose resources carry secrets,
	// such as SDS's private keys, or that are only worth having fresh. A
	// restart during an outage then starts without them.
	NotStored bool
	// Enabled is optional: it tells whether the type is on under the
	// engine's switches (gRPC's environment guards). A type that is off
	// is treated as not registered: its client features are not
	// advertised, watches of it fail and responses of it are ignored.
	// Nil means always on.
	Enabled func(features.Switches) bool
}

// EnabledUnder reports whether the type is on under sw (see Enabled).
func (t ResourceType) EnabledUnder(sw features.Switches) bool {
	return t.Enabled == nil || t.Enabled(sw)
}

// ShortName returns Name, or, when Name is empty, the last part of
// TypeURL's message name ("Cluster").
func (t ResourceType) ShortName() string {
	if t.Name != "" {
		return t.Name
	}
	n := TypeName(t.TypeURL)
	return n[strings.LastIndexByte(n, '.')+1:]
}

// TypeName returns the fully qualified message name of a type URL, the
// part after its last '/' ("envoy.config.cluster.v3.Cluster"). Any treats
// everything before it as an opaque host, so type URLs are compared by
// this name, and metrics label a resource type with it.
func TypeName(typeURL string) string {
	return typeURL[strings.LastIndexByte(typeURL, '/')+1:]
}

// ReadName returns the bytes of the name field (NameField) of the
// serialized resource raw without decoding the rest: the last occurrence,
// as proto.Unmarshal would keep. ok is false when the type has no name
// field, raw is not a well-formed sequence of fields, or the field is
// absent or not length-delimited. name is a subslice of raw.
func (t ResourceType) ReadName(raw []byte) (name []byte, ok bool) {
	if t.NameField <= 0 {
		return nil, false
	}
	it := protoscan.Fields(raw)
	for it.Next() {
		if it.Is(protoscan.Number(t.NameField), protoscan.BytesType) {
			name, ok = it.Value, true
		}
	}
	if it.Err() != nil {
		return nil, false
	}
	return name, ok
}

// ServerInfo tells a decoder or validator which xDS server sent the bytes.
type ServerInfo struct {
	URI      string
	Features features.Set
	// Delta says that the server speaks incremental xDS, whose features
	// (such as glob collections, xRFC TP1) State of the World lacks.
	Delta bool
}

// DecodeOptions is what a decoder and a validator learn besides the bytes.
type DecodeOptions struct {
	// WrapperName is the name of the envoy.service.discovery.v3.Resource
	// wrapper the resource arrived in, or "". Types whose message carries
	// no name (LbEndpointCollection) use it.
	WrapperName string
	// Server is the server the resource came from.
	Server ServerInfo
	// Switches are the engine's switches (gRPC's environment guards), for
	// types whose rules depend on one: EDS ignores
	// leds_cluster_locality_config when DisableEndpointFallback is set.
	// The zero value has every feature on.
	Switches features.Switches
	// OwnsRaw says that raw is the decoder's to keep: nothing modifies or
	// reuses it after Decode returns. The engine sets it, having copied
	// each resource out of its response, so a decoder that keeps the
	// bytes (for Equal, or to give the proto back) does not copy them a
	// second time. Other callers leave it false; see [DecodeOptions.KeepRaw].
	OwnsRaw bool
	// CertificateProviders, when set, reports whether the bootstrap
	// defines the certificate provider instance called name (its
	// "certificate_providers"). Types whose resources name instances
	// (Cluster, Listener) then reject a resource naming one it does not
	// know, as gRPC does (gRFC A29). An engine sets it from its bootstrap
	// unless its Config turns the check off. Nil means names are not
	// checked: a decoder called on its own, by a tool, has no bootstrap
	// to check them against.
	CertificateProviders func(name string) bool
}

// KeepRaw returns raw for a decoder to keep: raw itself when the caller
// handed it over (OwnsRaw), else a copy.
func (o DecodeOptions) KeepRaw(raw []byte) []byte {
	if o.OwnsRaw {
		return raw
	}
	return bytes.Clone(raw)
}

// DecodeResult is a decoder's output.
type DecodeResult struct {
	// Name is the resource's name. Set it even when returning an error if
	// the bytes got far enough to tell it.
	Name string
	// Resource is the decoded value; nil with an error.
	Resource Resource
}

// Decoder turns the serialized bytes of one resource into a Resource.
type Decoder interface {
	Decode(raw []byte, opts DecodeOptions) (DecodeResult, error)
}

// Validator checks a decoded resource. Its error should name the field and
// the rule; several problems are best returned together (errors.Join or
// go-multierror) so one NACK lists them all.
type Validator interface {
	Validate(r Resource, opts DecodeOptions) error
}

// DependencyExtractor names the resources a resource refers to.
type DependencyExtractor interface {
	Dependencies(r Resource) []Ref
}

// Ref names one resource of one type.
type Ref struct {
	TypeURL string
	Name    string
}

// String returns "typeURL/name", for logs.
func (r Ref) String() string { return r.TypeURL + "/" + r.Name }

// DecoderFunc adapts a function to a Decoder.
type DecoderFunc func(raw []byte, opts DecodeOptions) (DecodeResult, error)

// Decode calls f.
func (f DecoderFunc) Decode(raw []byte, opts DecodeOptions) (DecodeResult, error) {
	return f(raw, opts)
}

// ValidatorFunc adapts a function to a Validator.
type ValidatorFunc func(r Resource, opts DecodeOptions) error

// Validate calls f.
func (f ValidatorFunc) Validate(r Resource, opts DecodeOptions) error { return f(r, opts) }

// DependencyFunc adapts a function to a DependencyExtractor.
type DependencyFunc func(r Resource) []Ref

// Dependencies calls f.
func (f DependencyFunc) Dependencies(r Resource) []Ref { return f(r) }

// Decode runs the type's decoder and then its validator. The result's name
// falls back to opts.WrapperName when the decoder found none. A panic in
// the decoder or validator is turned into an error, so one bad plugin
// cannot take the engine down.
func (t ResourceType) Decode(raw []byte, opts DecodeOptions) (res DecodeResult, err error) {
	defer func() {
		if p := recover(); p != nil {
			res.Resource = nil
			err = fmt.Errorf("%s decoder panicked: %v", t.ShortName(), p)
		}
		if res.Name == "" {
			res.Name = opts.WrapperName
		}
	}()
	res, err = t.Decoder.Decode(raw, opts)
	if err != nil {
		res.Resource = nil
		return res, err
	}
	if res.Resource == nil {
		return res, errors.New("decoder returned no resource")
	}
	if t.Validator != nil {
		if err := t.Validator.Validate(res.Resource, opts); err != nil {
			res.Resource = nil
			return res, err
		}
	}
	return res, nil
}

// Refs returns the resources r depends on, or nil when the type has no
// dependency extractor.
func (t ResourceType) Refs(r Resource) []Ref {
	if t.Dependencies == nil || r == nil {
		return nil
	}
	return t.Dependencies.Dependencies(r)
}

// Errors New and With return, wrapped in a *TypeError.
var (
	ErrEmptyTypeURL  = errors.New("empty type URL")
	ErrBadTypeURL    = errors.New("type URL must have the form <host>/<message name>")
	ErrNilDecoder    = errors.New("nil decoder")
	ErrDuplicateType = errors.New("type URL registered twice")
	ErrBadNameField  = errors.New("NameField is not a valid protobuf field number")
	ErrUnknownType   = errors.New("resource type not registered")
)

// TypeError says which entry of a registry is wrong.
type TypeError struct {
	Index   int    // position in the arguments of New or With
	TypeURL string // the entry's type URL, possibly empty
	Err     error  // one of the Err values of this package
}

// Error names the type by its position and URL.
func (e *TypeError) Error() string {
	if e.TypeURL == "" {
		return fmt.Sprintf("registry: resource type #%d: %v", e.Index, e.Err)
	}
	return fmt.Sprintf("registry: resource type #%d (%s): %v", e.Index, e.TypeURL, e.Err)
}

// Unwrap returns the cause, one of the package's sentinel errors.
func (e *TypeError) Unwrap() error { return e.Err }

// Registry is an immutable set of resource types keyed by type URL.
// It is safe for concurrent use.
type Registry struct {
	types map[string]ResourceType
	urls  []string
}

// New builds a registry. It rejects an empty or malformed type URL, a nil
// decoder, a NameField that is no field number and a type URL given
// twice.
func New(types ...ResourceType) (*Registry, error) {
	r := &Registry{types: make(map[string]ResourceType, len(types))}
	if err := r.add(0, types); err != nil {
		return nil, err
	}
	return r, nil
}

// MustNew is New for package-level values and tests; it panics on error.
func MustNew(types ...ResourceType) *Registry {
	r, err := New(types...)
	if err != nil {
		panic(err)
	}
	return r
}

// With returns a new registry holding r's types and the given ones; r is
// unchanged. Re-registering a type URL of r is an error.
func (r *Registry) With(types ...ResourceType) (*Registry, error) {
	n := &Registry{types: make(map[string]ResourceType, len(r.types)+len(types))}
	for url, t := range r.types {
		n.types[url] = t
	}
	n.urls = slices.Clone(r.urls)
	if err := n.add(len(r.urls), types); err != nil {
		return nil, err
	}
	return n, nil
}

func (r *Registry) add(base int, types []ResourceType) error {
	for i, t := range types {
		idx := base + i
		switch {
		case t.TypeURL == "":
			return &TypeError{Index: idx, Err: ErrEmptyTypeURL}
		case !validTypeURL(t.TypeURL):
			return &TypeError{Index: idx, TypeURL: t.TypeURL, Err: ErrBadTypeURL}
		case t.Decoder == nil:
			return &TypeError{Index: idx, TypeURL: t.TypeURL, Err: ErrNilDecoder}
		case t.NameField != 0 && !protoscan.Number(t.NameField).Valid():
			return &TypeError{Index: idx, TypeURL: t.TypeURL, Err: ErrBadNameField}
		}
		if _, dup := r.types[t.TypeURL]; dup {
			return &TypeError{Index: idx, TypeURL: t.TypeURL, Err: ErrDuplicateType}
		}
		r.types[t.TypeURL] = t
		r.urls = append(r.urls, t.TypeURL)
	}
	slices.Sort(r.urls)
	return nil
}

func validTypeURL(u string) bool {
	i := strings.LastIndexByte(u, '/')
	if i <= 0 || i == len(u)-1 {
		return false
	}
	return !strings.ContainsAny(u, " \t\r\n")
}

// Lookup returns the type registered under typeURL.
func (r *Registry) Lookup(typeURL string) (ResourceType, bool) {
	if r == nil {
		return ResourceType{}, false
	}
	t, ok := r.types[typeURL]
	return t, ok
}

// ShortName returns the short name of typeURL ("Listener"): that of the
// type registered under it, or the last part of its message name for a
// type r does not have (r may be nil).
func (r *Registry) ShortName(typeURL string) string {
	t, ok := r.Lookup(typeURL)
	if !ok {
		t.TypeURL = typeURL
	}
	return t.ShortName()
}

// TypeURLs returns the registered type URLs, sorted.
func (r *Registry) TypeURLs() []string {
	if r == nil {
		return nil
	}
	return slices.Clone(r.urls)
}

// Len returns the number of registered types.
func (r *Registry) Len() int {
	if r == nil {
		return 0
	}
	return len(r.urls)
}
