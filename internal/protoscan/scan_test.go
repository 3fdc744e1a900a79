package protoscan_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"go.uber.org/goleak"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/xdsengine/xdsengine/internal/protoscan"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func tag(num protowire.Number, typ protowire.Type) []byte { return protowire.AppendTag(nil, num, typ) }

func str(num protowire.Number, v string) []byte {
	return protowire.AppendString(tag(num, protowire.BytesType), v)
}

func varint(num protowire.Number, v uint64) []byte {
	return protowire.AppendVarint(tag(num, protowire.VarintType), v)
}

func TestNext(t *testing.T) {
	long := string(make([]byte, 300))   // a length of two bytes
	huge := string(make([]byte, 20000)) // three
	tests := []struct {
		name    string
		in      []byte
		num     protoscan.Number
		typ     protoscan.Type
		value   []byte
		varint  uint64
		n       int // 0: len(in)
		wantErr error
	}{
		{name: "string", in: str(1, "abc"), num: 1, typ: protoscan.BytesType, value: []byte("abc")},
		{name: "empty string", in: str(7, ""), num: 7, typ: protoscan.BytesType, value: []byte{}},
		{name: "two-byte length", in: str(2, long), num: 2, typ: protoscan.BytesType, value: []byte(long)},
		{name: "three-byte length", in: str(2, huge), num: 2, typ: protoscan.BytesType, value: []byte(huge)},
		{name: "length written long", in: []byte{0x0a, 0x81, 0x80, 0x00, 'x'}, num: 1, typ: protoscan.BytesType, value: []byte("x")},
		{name: "followed by more", in: cat(str(1, "a"), str(2, "b")), num: 1, typ: protoscan.BytesType, value: []byte("a"), n: 3},
		{name: "one-byte varint", in: varint(3, 5), num: 3, typ: protoscan.VarintType, value: []byte{5}, varint: 5},
		{name: "long varint", in: varint(3, 1<<63), num: 3, typ: protoscan.VarintType, value: protowire.AppendVarint(nil, 1<<63), varint: 1 << 63},
		{name: "varint written long", in: []byte{0x18, 0x85, 0x00}, num: 3, typ: protoscan.VarintType, value: []byte{0x85, 0x00}, varint: 5},
		{name: "fixed32", in: protowire.AppendFixed32(tag(4, protowire.Fixed32Type), 9), num: 4, typ: protoscan.Fixed32Type, value: []byte{9, 0, 0, 0}},
		{name: "fixed64", in: protowire.AppendFixed64(tag(4, protowire.Fixed64Type), 9), num: 4, typ: protoscan.Fixed64Type, value: []byte{9, 0, 0, 0, 0, 0, 0, 0}},
		{name: "group", in: cat(tag(5, protowire.StartGroupType), varint(1, 1), tag(5, protowire.EndGroupType)), num: 5, typ: protoscan.StartGroupType,
			value: cat(varint(1, 1), tag(5, protowire.EndGroupType))},
		{name: "largest field number", in: str(protowire.MaxValidNumber, "x"), num: protoscan.MaxValidNumber, typ: protoscan.BytesType, value: []byte("x")},
		{name: "two-byte tag", in: str(1000, "x"), num: 1000, typ: protoscan.BytesType, value: []byte("x")},

		{name: "empty", in: nil, wantErr: protoscan.ErrTruncated},
		{name: "tag cut short", in: []byte{0x80}, wantErr: protoscan.ErrTruncated},
		{name: "no value", in: tag(1, protowire.VarintType), wantErr: protoscan.ErrTruncated},
		{name: "varint cut short", in: []byte{0x08, 0xff}, wantErr: protoscan.ErrTruncated},
		{name: "bytes cut short", in: str(1, "abc")[:4], wantErr: protoscan.ErrTruncated},
		{name: "length cut short", in: []byte{0x0a, 0x81}, wantErr: protoscan.ErrTruncated},
		{name: "fixed32 cut short", in: cat(tag(1, protowire.Fixed32Type), []byte{1, 2, 3}), wantErr: protoscan.ErrTruncated},
		{name: "fixed64 cut short", in: cat(tag(1, protowire.Fixed64Type), []byte{1, 2, 3, 4, 5, 6, 7}), wantErr: protoscan.ErrTruncated},
		{name: "group never closed", in: cat(tag(5, protowire.StartGroupType), varint(1, 1)), wantErr: protoscan.ErrTruncated},
		{name: "group closed by another", in: cat(tag(5, protowire.StartGroupType), tag(6, protowire.EndGroupType)), wantErr: protoscan.ErrGroup},
		{name: "varint of 11 bytes", in: cat(tag(1, protowire.VarintType), bytes.Repeat([]byte{0xff}, 10), []byte{1}), wantErr: protoscan.ErrOverflow},
		{name: "varint over 64 bits", in: cat(tag(1, protowire.VarintType), bytes.Repeat([]byte{0xff}, 9), []byte{0x7f}), wantErr: protoscan.ErrOverflow},
		{name: "field number 0", in: []byte{0x02, 0x00}, wantErr: protoscan.ErrBadTag},
		{name: "field number past the largest", in: str(protowire.MaxValidNumber+1, "x"), wantErr: protoscan.ErrBadTag},
		{name: "end group alone", in: tag(1, protowire.EndGroupType), wantErr: protoscan.ErrBadTag},
		{name: "wire type 6", in: []byte{0x0e, 0x00}, wantErr: protoscan.ErrBadTag},
		{name: "wire type 7", in: []byte{0x0f, 0x00}, wantErr: protoscan.ErrBadTag},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, n, err := protoscan.Next(tc.in)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Next(%x) error %v, want %v", tc.in, err, tc.wantErr)
			}
			if err != nil {
				return
			}
			want := tc.n
			if want == 0 {
				want = len(tc.in)
			}
			if f.Num != tc.num || f.Type != tc.typ || !bytes.Equal(f.Value, tc.value) || f.Varint() != tc.varint || n != want {
				t.Fatalf("Next(%x) = %d %d %x (varint %d), n %d; want %d %d %x (varint %d), n %d",
					tc.in, f.Num, f.Type, f.Value, f.Varint(), n, tc.num, tc.typ, tc.value, tc.varint, want)
			}
		})
	}
}

// reference is what protowire says of the first field of b, with
// proto.Unmarshal's limits on the top level of a message: a field number
// at most MaxValidNumber, no end-group tag.
func reference(b []byte) (num protowire.Number, typ protowire.Type, n int, ok bool) {
	num, typ, m := protowire.ConsumeTag(b)
	if m < 0 || num > protowire.MaxValidNumber || typ == protowire.EndGroupType {
		return 0, 0, 0, false
	}
	v := protowire.ConsumeFieldValue(num, typ, b[m:])
	if v < 0 {
		return 0, 0, 0, false
	}
	return num, typ, m + v, true
}

// FuzzNext: Next splits off a field exactly where protowire does, and
// refuses what protowire (with proto.Unmarshal's limits) refuses; its
// value is what protowire's Consume functions give.
func FuzzNext(f *testing.F) {
	for _, seed := range [][]byte{
		str(1, "abc"), varint(2, 1<<40), protowire.AppendFixed32(tag(3, protowire.Fixed32Type), 1),
		protowire.AppendFixed64(tag(3, protowire.Fixed64Type), 1), []byte{0x0a, 0x81, 0x00, 'x'}, {0x0a, 0x80},
		cat(tag(5, protowire.StartGroupType), str(1, "x"), tag(5, protowire.EndGroupType)),
		tag(5, protowire.EndGroupType), {0x0e}, {0x02}, str(protowire.MaxValidNumber+1, "x"),
		cat(tag(1, protowire.VarintType), bytes.Repeat([]byte{0xff}, 10)),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		num, typ, wantN, ok := reference(b)
		got, n, err := protoscan.Next(b)
		if (err == nil) != ok {
			t.Fatalf("Next(%x) error %v; protowire accepts: %v", b, err, ok)
		}
		if !ok {
			return
		}
		if n != wantN || got.Num != protoscan.Number(num) || got.Type != protoscan.Type(typ) {
			t.Fatalf("Next(%x) = field %d type %d n %d; protowire %d %d %d", b, got.Num, got.Type, n, num, typ, wantN)
		}
		_, _, tagLen := protowire.ConsumeTag(b) // perhaps written longer than needed
		value := b[tagLen:wantN]
		switch typ {
		case protowire.BytesType:
			v, _ := protowire.ConsumeBytes(value)
			if !bytes.Equal(got.Value, v) {
				t.Fatalf("value %x, protowire %x", got.Value, v)
			}
		case protowire.VarintType:
			x, _ := protowire.ConsumeVarint(value)
			if got.Varint() != x || !bytes.Equal(got.Value, value) {
				t.Fatalf("varint %d (%x), protowire %d (%x)", got.Varint(), got.Value, x, value)
			}
		default:
			if !bytes.Equal(got.Value, value) {
				t.Fatalf("value %x, protowire %x", got.Value, value)
			}
		}
		if v, rest, ok := protoscan.CutShortBytes(b[tagLen:]); ok && typ == protowire.BytesType {
			if !bytes.Equal(v, got.Value) || len(rest) != len(b)-wantN {
				t.Fatalf("CutShortBytes gives %x and %d bytes after, Next %x and %d", v, len(rest), got.Value, len(b)-wantN)
			}
		}
	})
}

func TestCutShortBytes(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		v    string
		rest int
		ok   bool
	}{
		{"one-byte length", []byte{3, 'a', 'b', 'c', 9}, "abc", 1, true},
		{"empty value", []byte{0}, "", 0, true},
		{"two-byte length", append([]byte{0x80, 0x01}, make([]byte, 128)...), string(make([]byte, 128)), 0, true},
		{"two-byte length written long", []byte{0x81, 0x00, 'x'}, "x", 0, true},
		{"three-byte length: left to Next", []byte{0x80, 0x80, 0x01}, "", 0, false},
		{"longer than what is left", []byte{4, 'a'}, "", 0, false},
		{"nothing", nil, "", 0, false},
		{"prefix cut short", []byte{0x80}, "", 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, rest, ok := protoscan.CutShortBytes(tc.in)
			if ok != tc.ok || string(v) != tc.v || len(rest) != tc.rest {
				t.Fatalf("CutShortBytes(%x) = %q, %d left, %v; want %q, %d, %v", tc.in, v, len(rest), ok, tc.v, tc.rest, tc.ok)
			}
		})
	}
}

func TestIter(t *testing.T) {
	msg := cat(str(1, "name"), varint(2, 300), str(1, "again"))
	it := protoscan.Fields(msg)
	var got []string
	for it.Next() {
		got = append(got, fmt.Sprintf("%d/%d %x raw %x rest %d", it.Num, it.Type, it.Value, it.Raw(), len(it.Rest())))
	}
	want := []string{
		fmt.Sprintf("1/2 %x raw %x rest %d", "name", str(1, "name"), len(msg)-6),
		fmt.Sprintf("2/0 %x raw %x rest %d", protowire.AppendVarint(nil, 300), varint(2, 300), 7),
		fmt.Sprintf("1/2 %x raw %x rest 0", "again", str(1, "again")),
	}
	if fmt.Sprint(got) != fmt.Sprint(want) || it.Err() != nil {
		t.Fatalf("fields %q, error %v; want %q", got, it.Err(), want)
	}

	it = protoscan.Fields(cat(str(1, "a"), []byte{0x0a, 0x05, 'x'}))
	n := 0
	for it.Next() {
		n++
	}
	if n != 1 || !errors.Is(it.Err(), protoscan.ErrTruncated) || it.Next() {
		t.Fatalf("%d fields then error %v; want 1 then ErrTruncated, and no more", n, it.Err())
	}
	if it := protoscan.Fields(nil); it.Next() || it.Err() != nil {
		t.Fatal("an empty message has a field or an error")
	}
}

func TestFieldValues(t *testing.T) {
	field := func(b []byte) protoscan.Field {
		f, _, err := protoscan.Next(b)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	tests := []struct {
		name    string
		f       protoscan.Field
		limit   uint64
		x       uint64
		ok      bool
		boolean bool
	}{
		{"within", field(varint(1, 65535)), 65535, 65535, true, true},
		{"above", field(varint(1, 65536)), 65535, 65536, false, true},
		{"zero", field(varint(1, 0)), 0, 0, true, false},
		{"bool beyond 1", field(varint(1, 2)), 1, 2, false, true},
		{"not a varint", field(str(1, "\x05")), 10, 0, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x, ok := tc.f.VarintAtMost(tc.limit)
			if x != tc.x || ok != tc.ok || tc.f.Bool() != tc.boolean {
				t.Fatalf("VarintAtMost(%d) = %d, %v; Bool %v; want %d, %v, %v", tc.limit, x, ok, tc.f.Bool(), tc.x, tc.ok, tc.boolean)
			}
		})
	}
	if f := field(str(3, "x")); !f.Is(3, protoscan.BytesType) || f.Is(3, protoscan.VarintType) || f.Is(4, protoscan.BytesType) {
		t.Fatal("Is does not compare number and type")
	}
}

func TestFieldSet(t *testing.T) {
	var s protoscan.FieldSet
	for _, step := range []struct {
		num   protoscan.Number
		isNew bool
	}{{1, true}, {38, true}, {1, false}, {63, true}, {63, false}, {64, false}, {0, false}, {-1, false}} {
		if got := s.Add(step.num); got != step.isNew {
			t.Errorf("Add(%d) = %v, want %v", step.num, got, step.isNew)
		}
	}
	for num, want := range map[protoscan.Number]bool{1: true, 38: true, 63: true, 2: false, 64: false, 0: false} {
		if s.Has(num) != want {
			t.Errorf("Has(%d) = %v, want %v", num, !want, want)
		}
	}
}

func TestValidUTF8(t *testing.T) {
	for in, want := range map[string]bool{"": true, "é": true, "\xc3": false, "\xff": false, "a\x00b": true} {
		if protoscan.ValidUTF8([]byte(in)) != want {
			t.Errorf("ValidUTF8(%q) = %v", in, !want)
		}
	}
}

// TestEncode: the encoders write what protowire writes, and the sizes
// are those of what they write.
func TestEncode(t *testing.T) {
	for _, num := range []protoscan.Number{1, 15, 16, 2047, 2048, protoscan.MaxValidNumber} {
		for _, s := range []string{"", "x", string(make([]byte, 200))} {
			got := protoscan.AppendStringField([]byte("head"), num, s)
			want := protowire.AppendString(protowire.AppendTag([]byte("head"), protowire.Number(num), protowire.BytesType), s)
			if !bytes.Equal(got, want) {
				t.Fatalf("AppendStringField(%d, %d bytes) = %x, want %x", num, len(s), got, want)
			}
			if size := protoscan.SizeTag(num) + protoscan.SizeBytes(len(s)); size != len(got)-len("head") {
				t.Fatalf("SizeTag + SizeBytes = %d, wrote %d", size, len(got)-len("head"))
			}
		}
	}
	for _, x := range []uint64{0, 127, 128, 1 << 63} {
		got := protoscan.AppendBytes(protoscan.AppendVarint(nil, x), []byte("v"))
		if want := protowire.AppendBytes(protowire.AppendVarint(nil, x), []byte("v")); !bytes.Equal(got, want) || protoscan.SizeVarint(x) != len(got)-2 {
			t.Fatalf("AppendVarint(%d) = %x, want %x", x, got, want)
		}
	}
	if got, want := protoscan.AppendTag(nil, 9, protoscan.Fixed64Type), protowire.AppendTag(nil, 9, protowire.Fixed64Type); !bytes.Equal(got, want) {
		t.Fatalf("AppendTag = %x, want %x", got, want)
	}
}
