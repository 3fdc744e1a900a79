// Package typedconfig reads the type of an extension's typed_config the
// way gRPC does, looking inside a TypedStruct (xds.type.v3 or the older
// udpa.type.v1), which carries the config of a type the server could not
// or would not encode as a message. LDS (HTTP filters) and RDS (per-route
// filter overrides, cluster specifier plugins) share it.
package typedconfig
