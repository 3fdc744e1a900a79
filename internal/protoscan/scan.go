package protoscan

import (
	"errors"
	"io"

	"google.golang.org/protobuf/encoding/protowire"
)

// Number is a field number.
type Number int32

// The field numbers a message may use.
const (
	MinValidNumber Number = 1
	MaxValidNumber Number = 1<<29 - 1
)

// Valid reports whether n is a field number a message may use.
func (n Number) Valid() bool { return MinValidNumber <= n && n <= MaxValidNumber }

// Type is a wire type.
type Type int8

// The wire types.
const (
	VarintType     Type = 0
	Fixed64Type    Type = 1
	BytesType      Type = 2
	StartGroupType Type = 3
	EndGroupType   Type = 4
	Fixed32Type    Type = 5
)

// The errors of Next and Iter. Each says that proto.Unmarshal refuses
// the message too.
var (
	ErrTruncated = errors.New("protoscan: field cut short")
	ErrOverflow  = errors.New("protoscan: varint longer than 10 bytes or over 64 bits")
	ErrBadTag    = errors.New("protoscan: field number out of range, reserved wire type, or end of a group never started")
	ErrGroup     = errors.New("protoscan: group not closed by its own end tag, or nested too deeply")
)

// Field is one field of a message, as Next reads it.
type Field struct {
	Num  Number
	Type Type
	// Value is, for BytesType, what the length prefix delimits; for
	// VarintType, Fixed32Type and Fixed64Type, the value's encoding; for
	// StartGroupType, the group's fields and its end tag.
	Value []byte
	// No more: a struct of at most 32 bytes is passed and returned in
	// registers, a larger one through memory, which made Next half as
	// slow again.
}

// Is reports whether f is field num of wire type typ: a known field sent
// with another wire type is an unknown field to proto.Unmarshal.
func (f Field) Is(num Number, typ Type) bool { return f.Num == num && f.Type == typ }

// Varint returns the value of a VarintType field; 0 for another type.
func (f Field) Varint() uint64 {
	if f.Type == VarintType && len(f.Value) == 1 {
		return uint64(f.Value[0]) // inlined: most varints are one byte
	}
	return longVarint(f)
}

//go:noinline
func longVarint(f Field) uint64 {
	if f.Type != VarintType {
		return 0
	}
	x, _ := protowire.ConsumeVarint(f.Value)
	return x
}

// VarintAtMost returns the value of a VarintType field if it is at most
// limit. A fast path calls it for a field whose value it would otherwise
// have to truncate as proto.Unmarshal does (an int32 or uint32 sent as
// 64 bits), or must range-check as its validation does.
func (f Field) VarintAtMost(limit uint64) (uint64, bool) {
	x := f.Varint()
	return x, x <= limit && f.Type == VarintType
}

// Bool is the value of a VarintType field as proto decodes a bool: any
// non-zero value is true.
func (f Field) Bool() bool { return f.Varint() != 0 }

// Next reads the first field of b, which is not empty: f, and n, the
// length of its encoding (b[:n] is the whole field, b[n:] what follows).
// It accepts exactly the fields proto.Unmarshal accepts at the top level
// of a message, whatever their number; an error says why not.
func Next(b []byte) (Field, int, error) {
	if f, n := short(b); n > 0 {
		return f, n, nil
	}
	return nextLong(b)
}

// short reads the fields most messages are made of, without a call: a
// tag of one byte, then a length of one byte and its value, or a varint
// of one byte. For any other, n is 0: nextLong reads it.
func short(b []byte) (Field, int) {
	// b[0]-8 wraps around for the tags of field 0, which are refused.
	if len(b) < 2 || b[0]-8 >= 0x80-8 || b[1] >= 0x80 {
		return Field{}, 0
	}
	switch l := int(b[1]); b[0] & 7 {
	case byte(VarintType):
		return Field{Number(b[0] >> 3), VarintType, b[1:2]}, 2
	case byte(BytesType):
		if l <= len(b)-2 {
			return Field{Number(b[0] >> 3), BytesType, b[2 : 2+l]}, 2 + l
		}
	}
	return Field{}, 0
}

// nextLong is Next for any field.
func nextLong(b []byte) (f Field, n int, err error) {
	if len(b) == 0 {
		return Field{}, 0, ErrTruncated
	}
	tag, i := uint64(b[0]), 1
	if tag >= 0x80 {
		var m int
		if tag, m = protowire.ConsumeVarint(b); m < 0 {
			return Field{}, 0, varintError(m)
		}
		i = m
	}
	if num := tag >> 3; num < uint64(MinValidNumber) || num > uint64(MaxValidNumber) {
		return Field{}, 0, ErrBadTag
	}
	f.Num, f.Type = Number(tag>>3), Type(tag&7)
	b = b[i:]
	switch f.Type {
	case BytesType:
		v, m, err := cutBytes(b)
		f.Value = v
		return f, i + m, err
	case VarintType:
		_, m := protowire.ConsumeVarint(b)
		if m < 0 {
			return Field{}, 0, varintError(m)
		}
		f.Value = b[:m]
		return f, i + m, nil
	case Fixed32Type, Fixed64Type:
		m := 4
		if f.Type == Fixed64Type {
			m = 8
		}
		if len(b) < m {
			return Field{}, 0, ErrTruncated
		}
		f.Value = b[:m]
		return f, i + m, nil
	case StartGroupType:
		m := protowire.ConsumeFieldValue(protowire.Number(f.Num), protowire.StartGroupType, b)
		if m < 0 {
			if errors.Is(protowire.ParseError(m), io.ErrUnexpectedEOF) {
				return Field{}, 0, ErrTruncated
			}
			return Field{}, 0, ErrGroup
		}
		f.Value = b[:m]
		return f, i + m, nil
	}
	// An end-group tag here has no start; 6 and 7 are reserved.
	return Field{}, 0, ErrBadTag
}

// cutBytes splits a length-delimited value off b: the value and the
// length of its encoding.
func cutBytes(b []byte) (v []byte, n int, err error) {
	if v, rest, ok := CutShortBytes(b); ok {
		return v, len(b) - len(rest), nil
	}
	l, i := protowire.ConsumeVarint(b)
	if i < 0 {
		return nil, 0, varintError(i)
	}
	if l > uint64(len(b)-i) {
		return nil, 0, ErrTruncated
	}
	return b[i : i+int(l)], i + int(l), nil
}

// varintError is the error of protowire.ConsumeVarint's code n.
func varintError(n int) error {
	if errors.Is(protowire.ParseError(n), io.ErrUnexpectedEOF) {
		return ErrTruncated
	}
	return ErrOverflow
}

// CutShortBytes splits b, a length-delimited value that follows its tag,
// after a length prefix of one or two bytes (values up to 127 bytes; 16
// KiB), which covers type URLs and most resources: v is the value, rest
// what follows it. It reports false for anything else, which the caller
// then reads with Next. It is written to be inlined into loops that run
// once per resource of a response.
func CutShortBytes(b []byte) (v, rest []byte, ok bool) {
	if len(b) == 0 {
		return nil, nil, false
	}
	n, i := int(b[0]), 1
	if n >= 0x80 {
		// A second byte of 0 (a length written longer than needed) is
		// accepted by proto.Unmarshal too.
		if len(b) < 2 || b[1] >= 0x80 {
			return nil, nil, false
		}
		n, i = n&0x7f|int(b[1])<<7, 2
	}
	if n > len(b)-i {
		return nil, nil, false
	}
	return b[i : i+n], b[i+n:], true
}

// Iter walks the fields of a message:
//
//	it := protoscan.Fields(b)
//	for it.Next() {
//		switch {
//		case it.Is(1, protoscan.BytesType):
//			name = it.Value
//		}
//	}
//	if it.Err() != nil {
//		return false // proto.Unmarshal refuses b too
//	}
type Iter struct {
	// Field is the current field, valid after Next reported true.
	Field
	msg []byte
	// The current field is msg[start:end]; what follows it, msg[end:].
	start, end int
	err        error
}

// Fields returns an Iter over the fields of the message b.
func Fields(b []byte) Iter { return Iter{msg: b} }

// Next moves to the next field. It reports false at the end of the
// message, or at a field that does not parse (Err).
func (it *Iter) Next() bool {
	rest := it.msg[it.end:]
	f, n := short(rest)
	if n == 0 {
		if len(rest) == 0 {
			return false
		}
		var err error
		if f, n, err = nextLong(rest); err != nil {
			it.err, it.end = err, len(it.msg) // no field after this one
			return false
		}
	}
	it.Field, it.start, it.end = f, it.end, it.end+n
	return true
}

// Err is why the last Next reported false, or nil at the end of the
// message.
func (it *Iter) Err() error { return it.err }

// Raw returns the encoding of the current field, tag included, for a
// walker that passes the field on to proto.Unmarshal as it came.
func (it *Iter) Raw() []byte { return it.msg[it.start:it.end] }

// Rest returns the fields after the current one.
func (it *Iter) Rest() []byte { return it.msg[it.end:] }
