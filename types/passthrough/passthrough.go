package passthrough

import (
	"errors"
	"fmt"

	clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	thriftpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/thrift_proxy/v3"
	tlspb "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	runtimepb "github.com/envoyproxy/go-control-plane/envoy/service/runtime/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/xdsengine/xdsengine/registry"
)

// ErrUnknownMessage is returned by [Type] for a type URL whose message is
// not linked into the program: no package that registers it with the
// protobuf runtime is imported.
var ErrUnknownMessage = errors.New("message type not linked into this program")

// typeURLOf returns the type URL of m's message type.
func typeURLOf(m proto.Message) string {
	return "type.googleapis.com/" + string(m.ProtoReflect().Descriptor().FullName())
}

// Type URLs of the Envoy resource types [Types] describes, the types
// go-control-plane's pkg/resource/v3 knows (but for ratelimit's
// RateLimitConfig, which is no Envoy resource) and LEDS's two.
var (
	ListenerTypeURL                 = typeURLOf((*listenerpb.Listener)(nil))
	RouteConfigurationTypeURL       = typeURLOf((*routepb.RouteConfiguration)(nil))
	ScopedRouteConfigurationTypeURL = typeURLOf((*routepb.ScopedRouteConfiguration)(nil))
	VirtualHostTypeURL              = typeURLOf((*routepb.VirtualHost)(nil))
	ClusterTypeURL                  = typeURLOf((*clusterpb.Cluster)(nil))
	ClusterLoadAssignmentTypeURL    = typeURLOf((*endpointpb.ClusterLoadAssignment)(nil))
	LbEndpointTypeURL               = typeURLOf((*endpointpb.LbEndpoint)(nil))
	LbEndpointCollectionTypeURL     = typeURLOf((*endpointpb.LbEndpointCollection)(nil))
	SecretTypeURL                   = typeURLOf((*tlspb.Secret)(nil))
	RuntimeTypeURL                  = typeURLOf((*runtimepb.Runtime)(nil))
	ExtensionConfigTypeURL          = typeURLOf((*corepb.TypedExtensionConfig)(nil))
	ThriftRouteConfigurationTypeURL = typeURLOf((*thriftpb.RouteConfiguration)(nil))
)

// naming says where a type's resources carry their names.
type naming int

const (
	// byField: the message's name field, else the wrapper's name.
	byField naming = iota
	// byWrapper: the wrapper's name, else the name field. VHDS names a
	// VirtualHost "<route configuration>/<host>" in its wrapper (delta
	// xDS always wraps), which VirtualHost.name does not hold.
	byWrapper
)

// envoyType is what Types knows of one Envoy type beyond its message.
type envoyType struct {
	url   string
	short string
	// nameField is the field that names a resource; "" derives it from
	// the message (a singular string field called name).
	nameField protoreflect.Name
	naming    naming
	// allRequired: LDS and CDS, the two types the xDS protocol makes
	// "state of the world" in every SotW response.
	allRequired bool
	refs        func(proto.Message, *reach) []registry.Ref
}

var envoyTypes = []envoyType{
	{url: ListenerTypeURL, short: "Listener", allRequired: true, refs: nestedRefs},
	{url: RouteConfigurationTypeURL, short: "RouteConfiguration"},
	{url: ScopedRouteConfigurationTypeURL, short: "ScopedRouteConfiguration"},
	{url: VirtualHostTypeURL, short: "VirtualHost", naming: byWrapper},
	{url: ClusterTypeURL, short: "Cluster", allRequired: true, refs: clusterRefs},
	{url: ClusterLoadAssignmentTypeURL, short: "ClusterLoadAssignment", nameField: "cluster_name", refs: assignmentRefs},
	{url: LbEndpointTypeURL, short: "LbEndpoint"},
	{url: LbEndpointCollectionTypeURL, short: "LbEndpointCollection"},
	{url: SecretTypeURL, short: "Secret"},
	{url: RuntimeTypeURL, short: "Runtime"},
	{url: ExtensionConfigTypeURL, short: "TypedExtensionConfig", refs: nestedRefs},
	{url: ThriftRouteConfigurationTypeURL, short: "ThriftRouteConfiguration"},
}

// Validation is how strictly a pass-through type checks the resources it
// takes: what fails is NACKed. See the package documentation, #
// Validation.
type Validation int

const (
	// Structural takes what any client can read: the resource unmarshals
	// into its type's message and has a name, and each extension config in
	// it whose message is linked unmarshals too, no more than 32 Anys
	// deep. (An engine has checked that its type URL is the response's.)
	// It is the default: whether a resource is good is for the clients
	// downstream to say, by their own rules, Envoy's or gRPC's.
	Structural Validation = iota
	// PGV adds the rules protoc-gen-validate generated from the proto's
	// annotations, as Envoy applies them: for a relay whose clients are all
	// Envoys, so that what they would reject is NACKed upstream once
	// rather than by each of them. gRPC clients do not apply these rules
	// and need resources they break: the api_listener's connection
	// manager istiod sends them has no stat_prefix, which PGV requires.
	PGV
)

// String returns "structural" or "pgv".
func (v Validation) String() string {
	switch v {
	case Structural:
		return "structural"
	case PGV:
		return "pgv"
	}
	return fmt.Sprintf("Validation(%d)", int(v))
}

// Options configure the types this package makes. The zero value is the
// default, that of [Registry], [Types] and [Type].
type Options struct {
	// Validation is how strictly resources are checked; the zero value
	// is [Structural].
	Validation Validation
}

// Types returns the pass-through types of the Envoy resources listed in
// the package documentation, Listener first. The slice is new on every
// call. It panics on an unknown Validation.
func (o Options) Types() []registry.ResourceType {
	out := make([]registry.ResourceType, len(envoyTypes))
	for i, et := range envoyTypes {
		rt, err := o.newType(et)
		if err != nil {
			panic("passthrough: " + err.Error()) // the messages are linked by this package's imports
		}
		out[i] = rt
	}
	return out
}

// Registry returns a new registry holding o's [Options.Types].
func (o Options) Registry() *registry.Registry {
	r, err := registry.New(o.Types()...)
	if err != nil {
		panic("passthrough: inconsistent resource types: " + err.Error())
	}
	return r
}

// Type returns a pass-through type for typeURL, as [Type] does, checking
// resources as o says.
func (o Options) Type(typeURL string) (registry.ResourceType, error) {
	et := envoyType{url: typeURL}
	for _, known := range envoyTypes {
		if known.url == typeURL {
			et = known
		}
	}
	rt, err := o.newType(et)
	if err != nil {
		return rt, err
	}
	if _, err := registry.New(rt); err != nil { // a malformed URL
		return registry.ResourceType{}, fmt.Errorf("passthrough: %w", err)
	}
	return rt, nil
}

// Types returns the pass-through types of the Envoy resources listed in
// the package documentation, Listener first, with [Structural]
// validation. The slice is new on every call.
func Types() []registry.ResourceType { return Options{}.Types() }

// Registry returns a new registry holding [Types]: structural validation.
// Options{Validation: PGV}.Registry() adds Envoy's protoc-gen-validate
// rules.
func Registry() *registry.Registry { return Options{}.Registry() }

// Type returns a pass-through type for typeURL, with [Structural]
// validation, whose message must be linked into the program
// (protoregistry.GlobalTypes). For the URLs of [Types] it returns the
// same descriptor as Types, dependencies included; for any other it
// returns a type without dependencies that is not "all resources
// required", whose name field is a top-level string field called "name"
// if the message has one.
func Type(typeURL string) (registry.ResourceType, error) { return Options{}.Type(typeURL) }

func (o Options) newType(et envoyType) (registry.ResourceType, error) {
	if o.Validation != Structural && o.Validation != PGV {
		return registry.ResourceType{}, fmt.Errorf("passthrough: type %s: unknown %v", et.url, o.Validation)
	}
	mt, err := protoregistry.GlobalTypes.FindMessageByURL(et.url)
	if err != nil {
		if errors.Is(err, protoregistry.NotFound) {
			err = ErrUnknownMessage
		}
		return registry.ResourceType{}, fmt.Errorf("passthrough: type %s: %w", et.url, err)
	}
	d := &decoder{url: et.url, mt: mt, short: et.short, naming: et.naming, refs: et.refs,
		nameField: nameFieldOf(mt.Descriptor(), et.nameField), refReach: newReach(refHolders...)}
	if d.short == "" {
		d.short = string(mt.Descriptor().Name())
	}
	rt := registry.ResourceType{
		TypeURL:                    et.url,
		Name:                       et.short,
		AllResourcesRequiredInSotW: et.allRequired,
		Decoder:                    d,
		Validator:                  &validator{reach: newReach(), rules: o.Validation == PGV},
	}
	if et.refs != nil {
		rt.Dependencies = registry.DependencyFunc(dependencies)
	}
	if d.nameField != nil && d.naming == byField {
		rt.NameField = int32(d.nameField.Number())
	}
	return rt, nil
}

// nameFieldOf returns md's field called name (or want, when set) if it
// is a singular string field outside any oneof (proto3 optional is no
// oneof), else nil.
func nameFieldOf(md protoreflect.MessageDescriptor, want protoreflect.Name) protoreflect.FieldDescriptor {
	if want == "" {
		want = "name"
	}
	fd := md.Fields().ByName(want)
	if fd == nil || fd.Kind() != protoreflect.StringKind || fd.Cardinality() == protoreflect.Repeated {
		return nil
	}
	if o := fd.ContainingOneof(); o != nil && !o.IsSynthetic() {
		return nil
	}
	return fd
}
