package protoscan

import "google.golang.org/protobuf/encoding/protowire"

// AppendTag appends the tag of field num of wire type typ to b.
func AppendTag(b []byte, num Number, typ Type) []byte {
	return protowire.AppendVarint(b, uint64(num)<<3|uint64(typ&7))
}

// AppendVarint appends the varint x to b.
func AppendVarint(b []byte, x uint64) []byte { return protowire.AppendVarint(b, x) }

// AppendBytes appends v to b, after its length.
func AppendBytes(b, v []byte) []byte { return protowire.AppendBytes(b, v) }

// AppendString appends s to b, after its length.
func AppendString(b []byte, s string) []byte { return protowire.AppendString(b, s) }

// AppendStringField appends field num, a string s, to b: its tag, its
// length and s.
func AppendStringField(b []byte, num Number, s string) []byte {
	return AppendString(AppendTag(b, num, BytesType), s)
}

// SizeTag is the length of the tag of field num.
func SizeTag(num Number) int { return protowire.SizeTag(protowire.Number(num)) }

// SizeVarint is the length of the varint x.
func SizeVarint(x uint64) int { return protowire.SizeVarint(x) }

// SizeBytes is the length of a length-delimited value of n bytes,
// length prefix included.
func SizeBytes(n int) int { return protowire.SizeBytes(n) }
