package protoscantest

import (
	"fmt"
	"slices"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/xdsengine/xdsengine/internal/protoscan"
)

// wireTypes are the wire types a field is sent with instead of its own.
var wireTypes = []struct {
	typ  protoscan.Type
	name string
}{
	{protoscan.VarintType, "a varint"}, {protoscan.Fixed32Type, "a fixed32"}, {protoscan.Fixed64Type, "a fixed64"},
	{protoscan.BytesType, "bytes"}, {protoscan.StartGroupType, "a group"},
}

// mutateLevel emits the mutations of the message fields of type md, and
// those of the messages its fields hold, each as the whole level's new
// fields. prefix is the level's path.
func mutateLevel(md protoreflect.MessageDescriptor, fields []field, prefix string, emit func(name string, fields []field)) {
	for i, f := range fields {
		at := prefix + fieldName(f)
		mutateField(fields, i, at, emit)
		if f.msg {
			mutateLevel(f.fd.Message(), f.sub, at+".", func(name string, sub []field) {
				emit(name, with(fields, i, bytesField(f.num, encode(sub), f.fd)))
			})
		}
	}
	unknown := protoscan.Number(1)
	for i := range md.Fields().Len() {
		unknown = max(unknown, protoscan.Number(md.Fields().Get(i).Number())+1)
	}
	for _, wt := range wireTypes {
		u := valueOf(unknown, wt.typ, 1)
		emit(fmt.Sprintf("%sunknown field %d, %s, first", prefix, unknown, wt.name), slices.Concat([]field{u}, fields))
		emit(fmt.Sprintf("%sunknown field %d, %s, last", prefix, unknown, wt.name), slices.Concat(fields, []field{u}))
	}
	emit(prefix+"unknown field numbered the largest", slices.Concat(fields, []field{valueOf(protoscan.MaxValidNumber, protoscan.BytesType, 0)}))
	for _, bad := range []struct {
		name string
		raw  []byte
	}{
		{"field number 0", []byte{0x00, 0x00}},
		{"field number past the largest", protoscan.AppendVarint(protoscan.AppendVarint(nil, uint64(protoscan.MaxValidNumber+1)<<3), 0)},
		{"wire type 6", []byte{1<<3 | 6, 0}},
		{"wire type 7", []byte{1<<3 | 7, 0}},
		{"an end-group tag alone", protoscan.AppendTag(nil, 1, protoscan.EndGroupType)},
		{"a group never closed", protoscan.AppendTag(nil, unknown, protoscan.StartGroupType)},
	} {
		emit(prefix+bad.name, slices.Concat(fields, []field{{raw: bad.raw}}))
	}
	if len(fields) > 0 {
		emit(prefix+"emptied", nil)
	}
}

func fieldName(f field) string {
	if f.fd == nil {
		return fmt.Sprintf("field %d", f.num)
	}
	return string(f.fd.Name())
}

// mutateField emits the mutations of fields[i]; at is its path.
func mutateField(fields []field, i int, at string, emit func(name string, fields []field)) {
	f := fields[i]
	emit(at+": sent twice", with(fields, i, f, f))
	if o, ok := another(f); ok {
		emit(at+": sent again with another value", with(fields, i, f, o))
		if i < len(fields)-1 {
			emit(at+": again, last, with another value", append(slices.Clone(fields), o))
		}
	}
	for _, wt := range wireTypes {
		if wt.typ != f.typ {
			emit(at+": sent as "+wt.name, with(fields, i, valueOf(f.num, wt.typ, 1)))
		}
	}
	if tag, n := tagOf(f); n > 0 {
		if long := longVarint(tag); long != nil {
			emit(at+": tag written long", with(fields, i, field{num: f.num, typ: f.typ, raw: slices.Concat(long, f.raw[n:])}))
		}
		switch f.typ {
		case protoscan.VarintType:
			if long := longVarint(f.varint()); long != nil {
				emit(at+": varint written long", with(fields, i, field{num: f.num, typ: f.typ, raw: slices.Concat(f.raw[:n], long)}))
			}
		case protoscan.BytesType:
			if long := longVarint(uint64(len(f.value))); long != nil {
				emit(at+": length written long", with(fields, i, field{num: f.num, typ: f.typ, raw: slices.Concat(f.raw[:n], long, f.value)}))
			}
		}
	}
	if f.typ == protoscan.BytesType {
		if f.fd != nil && f.fd.Kind() == protoreflect.StringKind {
			emit(at+": bad UTF-8", with(fields, i, bytesField(f.num, slices.Concat(f.value, []byte{0xff}), f.fd)))
			emit(at+": a UTF-8 sequence cut short", with(fields, i, bytesField(f.num, slices.Concat(f.value, []byte{0xc3}), f.fd)))
		}
		if len(f.value) > 0 {
			emit(at+": value cut short by a byte", with(fields, i, bytesField(f.num, f.value[:len(f.value)-1], f.fd)))
		}
	}
	emit(at+": dropped", with(fields, i))
	if i < len(fields)-1 {
		emit(at+": moved last", append(with(fields, i), f))
	}
	if f.fd != nil && f.fd.ContainingOneof() != nil && !f.fd.ContainingOneof().IsSynthetic() {
		members := f.fd.ContainingOneof().Fields()
		for j := range members.Len() {
			g := members.Get(j)
			if g.Number() == f.fd.Number() {
				continue
			}
			zero := valueOf(protoscan.Number(g.Number()), wireType(g), 0)
			emit(at+": then "+string(g.Name())+", another member of its oneof", with(fields, i, f, zero))
			emit(at+": after "+string(g.Name())+", another member of its oneof", with(fields, i, zero, f))
		}
	}
}

// another is f with another value of its wire type: a varint plus one, a
// string or bytes with a byte more, an empty message.
func another(f field) (field, bool) {
	switch f.typ {
	case protoscan.VarintType:
		return valueOf(f.num, protoscan.VarintType, f.varint()^1), true
	case protoscan.BytesType:
		if f.msg {
			return bytesField(f.num, nil, f.fd), true
		}
		return bytesField(f.num, slices.Concat(f.value, []byte("x")), f.fd), true
	case protoscan.Fixed32Type, protoscan.Fixed64Type:
		raw := slices.Clone(f.raw)
		raw[len(raw)-1] ^= 1
		return field{num: f.num, typ: f.typ, raw: raw}, true
	}
	return field{}, false
}

// tagOf is the tag of f and the length of its encoding; n is 0 for a
// field of bad bytes.
func tagOf(f field) (tag uint64, n int) {
	if f.num == 0 {
		return 0, 0
	}
	// A tag sent longer than needed keeps its own length.
	for n < len(f.raw) && f.raw[n] >= 0x80 {
		n++
	}
	return uint64(f.num)<<3 | uint64(f.typ), n + 1
}
