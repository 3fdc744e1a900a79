package protoscantest

import (
	"slices"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/xdsengine/xdsengine/internal/protoscan"
)

// Mutant is one mutation of a seed message.
type Mutant struct {
	// Name says what changed and where, as a path of field names:
	// "eds_cluster_config.service_name: bad UTF-8".
	Name  string
	Bytes []byte
}

// Mutate returns the mutations of seed, an encoded message of type md,
// at every level of the messages it holds: each field sent twice (the
// same, and with another value), with each other wire type, with its tag,
// length or varint written longer than needed, cut short, dropped or
// moved last; a string with bad UTF-8; a oneof member followed by
// another; unknown fields of every wire type; bad tags; the whole cut at
// every field. A level that does not parse is left as it is.
func Mutate(md protoreflect.MessageDescriptor, seed []byte) []Mutant {
	fields, ok := parse(md, seed)
	if !ok {
		return nil
	}
	var out []Mutant
	mutateLevel(md, fields, "", func(name string, mutated []field) {
		out = append(out, Mutant{Name: name, Bytes: encode(mutated)})
	})
	// The whole, cut just after each field, and inside it: after its
	// first byte, halfway and before its last byte.
	for _, f := range fieldEnds(fields) {
		if f.end < len(seed) {
			out = append(out, Mutant{Name: "cut after a field", Bytes: seed[:f.end:f.end]})
		}
		for _, at := range []int{f.start + 1, (f.start + f.end) / 2, f.end - 1} {
			if at > f.start && at < f.end {
				out = append(out, Mutant{Name: "cut inside a field", Bytes: seed[:at:at]})
			}
		}
	}
	return out
}

// field is one field of a parsed message.
type field struct {
	num   protoscan.Number
	typ   protoscan.Type
	raw   []byte // as sent, tag included
	value []byte // protoscan.Field.Value
	fd    protoreflect.FieldDescriptor
	// msg says that f is a message field of BytesType whose fields
	// parsed, into sub.
	msg bool
	sub []field
}

// varint is the value of a field of VarintType.
func (f field) varint() uint64 {
	g, _, _ := protoscan.Next(f.raw)
	return g.Varint()
}

// parse splits b into fields, and each message field into its own.
func parse(md protoreflect.MessageDescriptor, b []byte) ([]field, bool) {
	var fields []field
	it := protoscan.Fields(b)
	for it.Next() {
		f := field{num: it.Num, typ: it.Type, raw: it.Raw(), value: it.Value}
		f.fd = md.Fields().ByNumber(protoreflect.FieldNumber(it.Num))
		if f.fd != nil && f.fd.Message() != nil && it.Type == protoscan.BytesType {
			f.sub, f.msg = parse(f.fd.Message(), it.Value)
		}
		fields = append(fields, f)
	}
	return fields, it.Err() == nil
}

func encode(fields []field) []byte {
	var b []byte
	for _, f := range fields {
		b = append(b, f.raw...)
	}
	return b
}

// bytesField is field num of BytesType holding v.
func bytesField(num protoscan.Number, v []byte, fd protoreflect.FieldDescriptor) field {
	raw := protoscan.AppendBytes(protoscan.AppendTag(nil, num, protoscan.BytesType), v)
	return field{num: num, typ: protoscan.BytesType, raw: raw, value: raw[len(raw)-len(v):], fd: fd}
}

// valueOf is field num of wire type typ holding its type's zero or v.
func valueOf(num protoscan.Number, typ protoscan.Type, v uint64) field {
	raw := protoscan.AppendTag(nil, num, typ)
	switch typ {
	case protoscan.VarintType:
		raw = protoscan.AppendVarint(raw, v)
	case protoscan.Fixed32Type:
		raw = append(raw, byte(v), byte(v>>8), byte(v>>16), byte(v>>24))
	case protoscan.Fixed64Type:
		raw = append(raw, byte(v), byte(v>>8), byte(v>>16), byte(v>>24), byte(v>>32), byte(v>>40), byte(v>>48), byte(v>>56))
	case protoscan.BytesType:
		raw = protoscan.AppendBytes(raw, nil)
	case protoscan.StartGroupType:
		raw = protoscan.AppendTag(raw, num, protoscan.EndGroupType)
	}
	return field{num: num, typ: typ, raw: raw}
}

// wireType is the wire type of fd's values when not packed.
func wireType(fd protoreflect.FieldDescriptor) protoscan.Type {
	switch fd.Kind() {
	case protoreflect.StringKind, protoreflect.BytesKind, protoreflect.MessageKind:
		return protoscan.BytesType
	case protoreflect.GroupKind:
		return protoscan.StartGroupType
	case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind, protoreflect.FloatKind:
		return protoscan.Fixed32Type
	case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind, protoreflect.DoubleKind:
		return protoscan.Fixed64Type
	}
	return protoscan.VarintType
}

// longVarint encodes x in one byte more than it needs, which proto
// accepts; nil when x takes ten bytes already.
func longVarint(x uint64) []byte {
	b := protoscan.AppendVarint(nil, x)
	if len(b) == 10 {
		return nil
	}
	b[len(b)-1] |= 0x80
	return append(b, 0)
}

// with returns fields with fields[i] replaced by rep (none, one or more).
func with(fields []field, i int, rep ...field) []field {
	return slices.Concat(fields[:i:i], rep, fields[i+1:])
}

type fieldEnd struct{ start, end int }

// fieldEnds are where each field of a message starts and ends.
func fieldEnds(fields []field) []fieldEnd {
	var ends []fieldEnd
	at := 0
	for _, f := range fields {
		ends = append(ends, fieldEnd{at, at + len(f.raw)})
		at += len(f.raw)
	}
	return ends
}
