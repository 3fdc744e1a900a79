package lds

import (
	"bytes"
	"fmt"
	"time"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	"google.golang.org/protobuf/proto"

	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/internal/rawresource"
	"github.com/xdsengine/xdsengine/types/rds"
)

// TypeURL is the type URL of envoy.config.listener.v3.Listener.
const TypeURL = "type.googleapis.com/envoy.config.listener.v3.Listener"

// Options adjusts how Listener resources are validated.
type Options struct {
	// HTTPFilter reports whether the client runs HTTP filters whose
	// config has the message name typeName (inside a TypedStruct, its
	// type): such a filter of an API listener is then valid without
	// is_optional, and runs before the router; so is its per-route
	// override in an inline route configuration. It must be safe for
	// concurrent use. Nil means gRPC's filters alone. A server's filter
	// chains are held to gRPC's filters either way.
	HTTPFilter func(typeName string) bool
}

// NewType returns a descriptor for Listener resources validated with
// opts. Use it instead of [Type] when the client runs HTTP filters of its
// own (and rds.NewType with the same filters for its route
// configurations).
func NewType(opts Options) registry.ResourceType {
	v := validator{httpFilter: opts.HTTPFilter, routes: rds.NewType(rds.Options{HTTPFilter: opts.HTTPFilter}).Validator}
	return registry.ResourceType{
		TypeURL:                    TypeURL,
		Name:                       "Listener",
		AllResourcesRequiredInSotW: true,
		Decoder:                    registry.DecoderFunc(decode),
		NameField:                  1, // Listener.name
		Validator:                  registry.ValidatorFunc(v.validate),
		Dependencies:               registry.DependencyFunc(dependencies),
	}
}

// Type describes Listener resources to a registry, with gRPC's HTTP
// filters alone. A SotW response lists every subscribed Listener that
// exists, so one missing from a response has been deleted.
var Type = NewType(Options{})

// Listener is a decoded Listener: either a client's API listener holding
// an HttpConnectionManager (Server is nil), or a server's listener (gRFC
// A36), described by Server. The engine hands the same value to every
// watcher, so it and everything it points to must not be modified.
//
// In a valid API listener exactly one of RouteConfigName and RouteConfig
// is set. The fields before Server describe an API listener only; they
// are empty in a server's.
type Listener struct {
	Name string
	// RouteConfigName names the RouteConfiguration to fetch with RDS.
	RouteConfigName string
	// RouteConfig is the route configuration carried in the Listener.
	RouteConfig *rds.RouteConfiguration
	// HTTPFilters are the HTTP filters in order, as sent, including
	// optional filters of types gRPC does not implement, which a client
	// skips. In a valid Listener the last filter gRPC implements is the
	// router.
	HTTPFilters []HTTPFilter
	// MaxStreamDuration is common_http_protocol_options.max_stream_duration,
	// the default for routes that set none (gRFC A31). Zero means no limit.
	MaxStreamDuration time.Duration
	// Server is the server side of a Listener without api_listener: the
	// address a gRPC server listens on and the filter chains that
	// configure its connections. It is nil for an API listener.
	Server *ServerListener

	raw []byte
	// api and hcm hold what validation needs to know about an API
	// listener that a user of a valid one does not.
	api apiFacts
	hcm hcmFacts
}

type apiFacts struct {
	set     bool
	typeURL string // of api_listener.api_listener
}

// IsServer reports whether l is a server's Listener rather than a
// client's API listener.
func (l *Listener) IsServer() bool { return l.Server != nil }

// Proto returns the resource as sent by the server, unmarshaled afresh on
// every call, so the caller may modify it. Printing it with protojson is
// the intended use.
func (l *Listener) Proto() proto.Message { return rawresource.Proto[listenerv3.Listener](l.raw) }

// Equal reports whether other is a Listener with the same serialized form.
// It implements registry.Equaler.
func (l *Listener) Equal(other registry.Resource) bool {
	return rawresource.Equal(l, other, func(a, b *Listener) bool { return bytes.Equal(a.raw, b.raw) })
}

// String summarizes the listener on one line, for logs and tools.
func (l *Listener) String() string {
	if l.Server != nil {
		return l.Server.String()
	}
	if l.RouteConfig != nil {
		return "inline route configuration: " + l.RouteConfig.String()
	}
	return "RDS " + l.RouteConfigName
}

// problems are broken rules found while converting a message, kept for
// the validator to report: the decoder fails only for bytes that do not
// parse. Fields are relative to the message that holds them.
type problems []registry.FieldError

func (p *problems) add(field, rule string) {
	*p = append(*p, registry.FieldError{Field: field, Rule: rule})
}

func (p *problems) addf(field, format string, args ...any) {
	p.add(field, fmt.Sprintf(format, args...))
}

// reportTo adds every problem to errs, its field under prefix ("" for
// none).
func (p problems) reportTo(prefix string, errs *registry.FieldErrors) {
	for i := range p {
		if prefix == "" {
			errs.Add(p[i].Field, p[i].Rule)
			continue
		}
		errs.AddError(registry.FieldWithin(prefix, &p[i]))
	}
}
