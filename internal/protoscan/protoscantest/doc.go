// Package protoscantest is the differential harness of the module's
// protobuf fast paths (package protoscan and the walkers beside their
// types): whenever a fast path accepts bytes, proto.Unmarshal, and what
// the fast path's caller does with its message, accepts them too, with
// an equal result.
//
// A [Differential] pairs a fast path with that reference. Its Test method
// runs both on seed messages and on their mutations ([Mutate]), the same
// for every fast path: duplicate fields, wrong wire types, varints, tags
// and lengths written longer than needed, bad UTF-8, truncation, unknown
// fields, bad tags, oneof members in both orders. Its Fuzz method puts
// the same inputs in a fuzz target's corpus and fuzzes the comparison.
// It is for tests only.
package protoscantest
