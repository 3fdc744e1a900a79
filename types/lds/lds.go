package lds

import (
	"bytes"
	"time"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	"google.golang.org/protobuf/proto"

	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/internal/rawresource"
	"github.com/xdsengine/xdsengine/types/rds"
)

// TypeURL is the type URL of envoy.config.listener.v3.Listener.
const TypeURL = "type.googleapis.com/envoy.config.listener.v3.Listener"

// Type describes Listener resources to a registry. A SotW response lists
// every subscribed Listener that exists, so one missing from a response
// has been deleted.
var Type = registry.ResourceType{
	TypeURL:                    TypeURL,
	Name:                       "Listener",
	AllResourcesRequiredInSotW: true,
	Decoder:                    registry.DecoderFunc(decode),
	NameField:                  1, // Listener.name
	Validator:                  registry.ValidatorFunc(validate),
	Dependencies:               registry.DependencyFunc(dependencies),
}

// Listener is a decoded client-side Listener: an API listener holding an
// HttpConnectionManager. The engine hands the same value to every
// watcher, so it and everything it points to must not be modified.
//
// Exactly one of RouteConfigName and RouteConfig is set in a valid
// Listener.
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

	raw []byte
	// hcm holds what validation needs to know about the message that a
	// user of a valid Listener does not.
	hcm hcmFacts
}

// HTTPFilter is one entry of HttpConnectionManager.http_filters.
type HTTPFilter struct {
	Name string
	// ConfigTypeURL is the type URL of typed_config, looked up inside a
	// TypedStruct wrapper; empty when typed_config is missing.
	ConfigTypeURL string
	// Optional is is_optional: a client that does not implement the
	// filter may skip it.
	Optional bool
}

// Proto returns the resource as sent by the server, unmarshaled afresh on
// every call, so the caller may modify it. Printing it with protojson is
// the intended use.
func (l *Listener) Proto() proto.Message { return rawresource.Proto[listenerv3.Listener](l.raw) }

// Equal reports whether other is a Listener with the same serialized form.
// It implements registry.Equaler.
func (l *Listener) Equal(other registry.Resource) bool {
	return rawresource.Equal(l, other, func(a, b *Listener) bool { return bytes.Equal(a.raw, b.raw) })
}

type routeSpecifier int

const (
	routeSpecifierNone routeSpecifier = iota
	routeSpecifierRDS
	routeSpecifierInline
	routeSpecifierScoped
)

type configSource int

const (
	configSourceMissing configSource = iota
	configSourceADS
	configSourceSelf
	configSourceOther
)

type hcmFacts struct {
	apiListenerSet                bool
	typeURL                       string // of api_listener.api_listener
	routeSpecifier                routeSpecifier
	rdsConfigSource               configSource
	xffNumTrustedHops             uint32
	originalIPDetectionExtensions int
}

// String summarizes the listener on one line, for logs and tools.
func (l *Listener) String() string {
	if l.RouteConfig != nil {
		return "inline route configuration: " + l.RouteConfig.String()
	}
	return "RDS " + l.RouteConfigName
}
