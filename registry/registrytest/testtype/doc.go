// Package testtype is a minimal resource type for tests of anything that
// consumes resources (an engine, a Source of one's own, a graph): a
// google.protobuf.Struct whose "name" field names it, so that a test
// writes resources as key-value pairs ([Message], [Any]) rather than as
// Envoy protos.
//
// Validation fails when the struct has a field "invalid" (its string value
// is the error text). A field "deps" holding a list of "typeURL|name"
// strings becomes the resource's dependencies. [TypeURL] behaves as an
// endpoint-like type, [RequiredTypeURL] as a Listener-like one, whose
// State-of-the-World responses carry every resource.
package testtype
