package main

import (
	"fmt"
	"math"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/cds"
)

// TypeURL is the type URL the management server sends rate limit policies
// under. The library has never heard of it: the descriptor below is all it
// needs.
const TypeURL = "type.googleapis.com/example.ratelimit.v1.RateLimitPolicy"

// RateLimitPolicy is the decoded form every watcher receives. The engine
// hands the same value to all of them, so it is never modified after
// decoding.
//
// On the wire it is a google.protobuf.Struct such as
//
//	{"name": "checkout", "cluster": "ratelimit-service",
//	 "requests_per_unit": 100, "unit": "second"}
//
// which spares the example a .proto file; a real type would more likely
// be a generated message, decoded the same way.
type RateLimitPolicy struct {
	Name string
	// Cluster is the rate limit service to consult, a Cluster resource:
	// the policy depends on it.
	Cluster         string
	RequestsPerUnit int
	Unit            string // "second", "minute" or "hour"
}

// String is what the example prints; the graph watch uses it too.
func (p *RateLimitPolicy) String() string {
	return fmt.Sprintf("%d requests per %s, enforced by cluster %q", p.RequestsPerUnit, p.Unit, p.Cluster)
}

// Equal tells the engine when a new version means the same thing, so
// watchers are not woken for a re-sent, unchanged policy. Without it the
// engine compares the serialized bytes.
func (p *RateLimitPolicy) Equal(other registry.Resource) bool {
	o, ok := other.(*RateLimitPolicy)
	return ok && *o == *p
}

// RateLimitPolicyType is the resource type descriptor: what
// registry.Registry.With and the conformance kit take.
var RateLimitPolicyType = registry.ResourceType{
	TypeURL:      TypeURL,
	Name:         "RateLimitPolicy",
	Decoder:      registry.DecoderFunc(decode),
	Validator:    registry.ValidatorFunc(validate),
	Dependencies: registry.DependencyFunc(dependencies),
}

// decode checks the shape of the bytes: a Struct whose fields have the
// right JSON types. Rules about values are the validator's.
func decode(raw []byte, opts registry.DecodeOptions) (registry.DecodeResult, error) {
	var s structpb.Struct
	if err := proto.Unmarshal(raw, &s); err != nil {
		return registry.DecodeResult{}, fmt.Errorf("not a google.protobuf.Struct: %w", err)
	}
	f := fields{m: s.GetFields()}
	p := &RateLimitPolicy{
		Name:            f.string("name"),
		Cluster:         f.string("cluster"),
		RequestsPerUnit: f.count("requests_per_unit"),
		Unit:            f.string("unit"),
	}
	if p.Name == "" {
		// A server may send the policy inside a named
		// envoy.service.discovery.v3.Resource wrapper instead.
		p.Name = opts.WrapperName
	}
	if p.Name == "" {
		f.Add("name", "must be a non-empty string")
	}
	// The name is returned even with an error, so that the NACK and the
	// watcher's error say which policy was rejected.
	if err := f.Err(); err != nil {
		return registry.DecodeResult{Name: p.Name}, err
	}
	return registry.DecodeResult{Name: p.Name, Resource: p}, nil
}

// validate applies the rules. Each problem names its field and the rule
// it breaks, and all of them are reported at once, so that one NACK tells
// the operator everything to fix.
func validate(r registry.Resource, _ registry.DecodeOptions) error {
	p := r.(*RateLimitPolicy)
	var f fields
	if p.Cluster == "" {
		f.Add("cluster", "must name the rate limit service's Cluster")
	}
	if p.RequestsPerUnit < 1 {
		f.Addf("requests_per_unit", "must be at least 1, got %d", p.RequestsPerUnit)
	}
	switch p.Unit {
	case "second", "minute", "hour":
	default:
		f.Addf("unit", `must be "second", "minute" or "hour", got %q`, p.Unit)
	}
	return f.Err()
}

// dependencies names the Cluster a policy needs. A dependency graph
// watch (graph.Watch) follows it; see examples/compose.
func dependencies(r registry.Resource) []registry.Ref {
	return []registry.Ref{{TypeURL: cds.TypeURL, Name: r.(*RateLimitPolicy).Cluster}}
}

// fields reads a Struct's fields and collects "field: rule" problems in
// registry.FieldErrors, the one-line format every built-in type's NACK
// uses too: the error ends up in a log line and in the NACK's
// error_detail.
type fields struct {
	m map[string]*structpb.Value
	registry.FieldErrors
}

// string returns a string field; a missing one is "", left for the
// validator to judge.
func (f *fields) string(key string) string {
	v, ok := f.m[key]
	if !ok {
		return ""
	}
	s, ok := v.GetKind().(*structpb.Value_StringValue)
	if !ok {
		f.Add(key, "must be a string")
		return ""
	}
	return s.StringValue
}

// count returns a whole, non-negative number field; a missing one is 0.
func (f *fields) count(key string) int {
	v, ok := f.m[key]
	if !ok {
		return 0
	}
	n, ok := v.GetKind().(*structpb.Value_NumberValue)
	if !ok || n.NumberValue < 0 || n.NumberValue > math.MaxInt32 || n.NumberValue != math.Trunc(n.NumberValue) {
		f.Add(key, "must be a whole number from 0 to 2147483647")
		return 0
	}
	return int(n.NumberValue)
}
