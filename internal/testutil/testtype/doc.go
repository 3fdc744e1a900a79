// Package testtype is a minimal resource type for the engine's own tests:
// a google.protobuf.Struct whose "name" field names it.
//
// Validation fails when the struct has a field "invalid" (its string value
// is the error text). A field "deps" holding a list of "typeURL|name"
// strings becomes the resource's dependencies.
package testtype
