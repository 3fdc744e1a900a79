package engine

import (
	"errors"
	"fmt"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/registry"
)

// Kind classifies an error a watcher sees.
type Kind int

const (
	// KindUnknown is the kind of an error that is not an *Error.
	KindUnknown Kind = iota
	// KindConnectivity: the server is unreachable or the ADS stream
	// failed before any response (gRFC A57). Transient; UNAVAILABLE.
	KindConnectivity
	// KindNACK: the resource failed validation. Data; INVALID_ARGUMENT.
	KindNACK
	// KindDeleted: the server deleted the resource (left out of a SotW
	// LDS/CDS response, or removed incrementally). Data; NOT_FOUND.
	KindDeleted
	// KindDoesNotExist: the does-not-exist timer fired. NOT_FOUND.
	KindDoesNotExist
	// KindTimeout: the does-not-exist timer fired on a server with
	// resource_timer_is_transient_error. Transient; UNAVAILABLE.
	KindTimeout
	// KindServerReported: an xRFC TP3 error, with the server's code. Data
	// for NOT_FOUND and PERMISSION_DENIED, transient otherwise.
	KindServerReported
	// KindInvalidName: the resource name does not parse. INVALID_ARGUMENT.
	KindInvalidName
	// KindUnknownAuthority: an xdstp:// name's authority is not in the
	// bootstrap. FAILED_PRECONDITION.
	KindUnknownAuthority
	// KindUnknownType: the type URL is not registered (or is switched
	// off), or a resource is not a typed watcher's Go type. FAILED_PRECONDITION.
	KindUnknownType
	// KindUnroutable: a Mux has no source for it. FAILED_PRECONDITION.
	KindUnroutable
	// KindClosed: the engine was closed. UNAVAILABLE.
	KindClosed
	// KindDependency: a dependency graph cannot be resolved (a missing or
	// failed resource, or a cycle). The underlying error's code.
	KindDependency
	// KindResponseTooLarge: a response over Config.MaxResponseBytes could
	// not be read. Transient; RESOURCE_EXHAUSTED.
	KindResponseTooLarge
)

var kindNames = [...]string{
	KindUnknown:          "unknown",
	KindConnectivity:     "connectivity",
	KindNACK:             "NACK",
	KindDeleted:          "deleted",
	KindDoesNotExist:     "does not exist",
	KindTimeout:          "timeout",
	KindServerReported:   "server reported",
	KindInvalidName:      "invalid name",
	KindUnknownAuthority: "unknown authority",
	KindUnknownType:      "unknown type",
	KindUnroutable:       "unroutable",
	KindClosed:           "closed",
	KindDependency:       "dependency",
	KindResponseTooLarge: "response too large",
}

// String returns the kind's name, for logs.
func (k Kind) String() string {
	if k >= 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Error is every error the engine gives a watcher. It carries a gRPC
// status code, so status.Code(err) works, and its message ends with the
// node ID, as gRPC's does, to tell the reader which client it is.
type Error struct {
	Kind      Kind
	Code      codes.Code
	TypeURL   string                  // resource type, if the error is about one resource
	Name      string                  // resource name, likewise
	ServerURI string                  // the xDS server involved, if any
	server    *bootstrap.ServerConfig // its bootstrap entry, for Update.Server
	NodeID    string
	Err       error // the cause
}

// Error formats as "<what>: <cause> (xDS server <uri>) (node ID: <id>)".
func (e *Error) Error() string {
	var b strings.Builder
	if e.TypeURL != "" || e.Name != "" {
		fmt.Fprintf(&b, "%s resource %q: ", registry.ResourceType{TypeURL: e.TypeURL}.ShortName(), e.Name)
	}
	if e.Err != nil {
		b.WriteString(e.Err.Error())
	} else {
		b.WriteString(e.Kind.String())
	}
	if e.ServerURI != "" {
		fmt.Fprintf(&b, " (xDS server %s)", e.ServerURI)
	}
	fmt.Fprintf(&b, " (node ID: %s)", e.NodeID)
	return b.String()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// GRPCStatus makes status.Code and status.FromError work on the error.
func (e *Error) GRPCStatus() *status.Status { return status.New(e.Code, e.Error()) }

// Class tells whether the error is a data error or a transient one (A88).
func (e *Error) Class() features.ErrorClass {
	switch e.Kind {
	case KindNACK, KindDeleted, KindDoesNotExist:
		return features.DataError
	case KindServerReported:
		if e.Code == codes.NotFound || e.Code == codes.PermissionDenied {
			return features.DataError
		}
	}
	return features.TransientError
}

// KindOf returns the Kind of the first *Error in err's chain.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return KindUnknown
}

// ErrClosed is the cause of errors about a closed engine.
var ErrClosed = errors.New("xDS engine closed")

// newError is an error of kind and code about en (nil: none), from c's
// server (nil: none).
func (e *Engine) newError(kind Kind, code codes.Code, en *entry, c *channel, cause error) *Error {
	err := &Error{Kind: kind, Code: code, NodeID: e.nodeID, Err: cause}
	if en != nil {
		err.TypeURL, err.Name = en.typ.TypeURL, en.name
	}
	if c != nil {
		err.ServerURI, err.server = c.server.URI, &c.server
	}
	return err
}
