package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	statuspb "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/xdsengine/xdsengine/internal/xdsname"

	// Extensions that gRPC clients use inside Listeners, routes and
	// clusters, so that protojson can print the Any fields that hold
	// them. Any other type still prints, as its type URL and bytes.
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/fault/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/gcp_authn/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/stateful_session/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/http/stateful_session/cookie/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/maglev/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/round_robin/v3"
)

// marshalJSON renders m as indented protojson, ending in a newline. The
// layout is stable (protojson's own is deliberately not). An Any whose
// type is not linked in does not fail the whole message: it is shown as
// a google.protobuf.Struct holding its type URL and base64 bytes.
func marshalJSON(m proto.Message) ([]byte, error) {
	opts := protojson.MarshalOptions{UseProtoNames: false}
	b, err := opts.Marshal(m)
	if err != nil {
		b, err = opts.Marshal(withPrintableAnys(m))
		if err != nil {
			return nil, err
		}
	}
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

const unresolvedTypeURL = "type.googleapis.com/google.protobuf.Struct"

// withPrintableAnys returns a copy of m in which every Any, at any depth,
// holds a message protojson can print.
func withPrintableAnys(m proto.Message) proto.Message {
	m = proto.Clone(m)
	fixMessage(m.ProtoReflect())
	return m
}

func fixMessage(m protoreflect.Message) {
	if a, ok := m.Interface().(*anypb.Any); ok {
		fixAny(a)
		return
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsMap():
			if fd.MapValue().Message() != nil {
				v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
					fixMessage(mv.Message())
					return true
				})
			}
		case fd.IsList():
			if fd.Message() != nil {
				l := v.List()
				for i := range l.Len() {
					fixMessage(l.Get(i).Message())
				}
			}
		case fd.Message() != nil:
			fixMessage(v.Message())
		}
		return true
	})
}

func fixAny(a *anypb.Any) {
	inner, err := a.UnmarshalNew()
	if err != nil {
		s := &structpb.Struct{Fields: map[string]*structpb.Value{
			"unresolved_type_url": structpb.NewStringValue(a.GetTypeUrl()),
			"value_base64":        structpb.NewStringValue(base64.StdEncoding.EncodeToString(a.GetValue())),
			"error":               structpb.NewStringValue(err.Error()),
		}}
		b, _ := proto.Marshal(s)
		a.TypeUrl, a.Value = unresolvedTypeURL, b
		return
	}
	fixMessage(inner.ProtoReflect())
	if b, err := (proto.MarshalOptions{Deterministic: true}).Marshal(inner); err == nil {
		a.Value = b
	}
}

// codeName spells a gRPC status code as the gRPC spec does
// (INVALID_ARGUMENT).
func codeName(c codes.Code) string {
	if c == codes.OK {
		return "OK"
	}
	camel := c.String()
	if strings.HasPrefix(camel, "Code(") {
		return camel
	}
	var b strings.Builder
	for i, r := range camel {
		if i > 0 && r >= 'A' && r <= 'Z' {
			b.WriteByte('_')
		}
		b.WriteRune(r)
	}
	return strings.ToUpper(b.String())
}

// errorLine is "CODE: message".
func errorLine(err error) string {
	return codeName(status.Code(err)) + ": " + err.Error()
}

// cacheKey is the name under which the engine caches a resource: the
// name itself, or for xdstp:// names their canonical form.
func cacheKey(name string) string {
	if strings.HasPrefix(name, "xdstp:") {
		if c, err := xdsname.Canonical(name); err == nil {
			return c
		}
	}
	return name
}

// findConfig returns the CSDS entry of a resource, or nil.
func findConfig(cc *statuspb.ClientConfig, typeURL, name string) *statuspb.ClientConfig_GenericXdsConfig {
	key := cacheKey(name)
	for _, g := range cc.GetGenericXdsConfigs() {
		if g.GetTypeUrl() == typeURL && (g.GetName() == key || g.GetName() == name) {
			return g
		}
	}
	return nil
}

// stateSummary describes a CSDS entry in one line's worth of fields:
// `version="1" state=ACKED`, plus the version that failed, if any.
func stateSummary(g *statuspb.ClientConfig_GenericXdsConfig) string {
	if g == nil {
		return "state=NOT_CACHED"
	}
	s := fmt.Sprintf("version=%q state=%s", g.GetVersionInfo(), g.GetClientStatus())
	if fv := g.GetErrorState().GetVersionInfo(); fv != "" {
		s += fmt.Sprintf(" failed_version=%q", fv)
	}
	return s
}
