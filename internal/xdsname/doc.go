// Package xdsname parses, canonicalizes and builds xDS resource names.
//
// Two forms exist. Old-style names are opaque strings such as
// "server.example.com"; anything that does not start with "xdstp:" is one.
// New-style names (xRFC TP1, gRFC A47) are URIs:
//
//	xdstp://[authority]/{resource type}/{id}[?{context params}]
//
// The authority selects the servers from the bootstrap "authorities" map,
// the type must match the resource type the name is used for, and the
// context params are key=value pairs whose order does not matter: TP1
// makes two names equal when they match component-wise modulo param
// order, so resources are keyed by [Name.String], which sorts them.
//
// The package follows gRPC's reading of these names:
//
//   - The URI path is percent-decoded first and then split at its first
//     '/', so an encoded "%2F" in the id means the same as a plain '/'
//     (grpc-go and C-core both decode before splitting).
//   - A context param that appears twice keeps its last value; A47 leaves
//     the case undefined and suggests this.
//   - '+' in a query is a plain '+', not a space: these are RFC 3986 URIs,
//     not HTML form data. [Name.String] writes '+' as "%2B" so that
//     readers that do treat it as a space (Go's url.ParseQuery, which
//     grpc-go uses) see the same value.
//   - A "#" processing directive is not part of the resource's identity
//     (TP1: resource names, unlike locators, carry none) and is dropped,
//     as gRPC C-core does.
//
// [ExpandTemplate] fills the bootstrap's listener resource name templates
// the way grpc-go does.
package xdsname
