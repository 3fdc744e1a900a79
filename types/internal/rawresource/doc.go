// Package rawresource holds what the built-in resource types (types/lds,
// rds, cds, eds, leds) share about the bytes a resource arrived as, which
// each keeps instead of its message: [Proto] gives the resource back as a
// new message, and [Equal] compares two versions of it, for their Proto
// and Equal methods.
package rawresource
