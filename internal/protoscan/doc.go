// Package protoscan reads and writes the protobuf wire format for the
// module's hand-written fast paths. It is the only non-generated code of
// the module that imports google.golang.org/protobuf/encoding/protowire
// (TestOnlyProtoscanImportsProtowire checks it), so that the rules every
// fast path must keep to live in one place:
//
//   - [Next] and [Iter] split a message into fields (number, wire type,
//     value), and refuse what proto.Unmarshal refuses while splitting:
//     truncated fields ([ErrTruncated]), varints longer than ten bytes
//     ([ErrOverflow]), field numbers outside 1 to 2^29-1, wire types 6
//     and 7 and end-group tags without their start ([ErrBadTag]), groups
//     that do not close ([ErrGroup]).
//   - [CutShortBytes] is the inlinable split of a length-delimited value
//     with a length prefix of one or two bytes, for the loops that run
//     once per resource of a response.
//   - [Field.VarintAtMost] bounds a varint, for the fields whose
//     truncation to 32 bits a fast path does not reproduce; [ValidUTF8]
//     is proto3's rule for strings; [FieldSet] finds a field sent twice,
//     which proto.Unmarshal merges (messages) or lets the last win
//     (scalars), and which a fast path leaves to it.
//   - [AppendTag], [AppendString] and the Size functions encode fields.
//
// The walkers of particular messages stay beside their types
// (types/cds, types/eds, types/internal/lbendpoint, registry's ReadName,
// engine/internal/wire's envelope) and use only this package. Each of
// them reads the usual shape of its message and leaves anything else to
// proto.Unmarshal; the harness in protoscantest checks, on shared
// mutations of seed messages, that whatever a fast path accepts
// proto.Unmarshal accepts too, with an equal result.
//
// Why hand-written walkers at all: generated fast unmarshallers are not
// available for the xDS messages without forking go-control-plane. Its
// envoy module (github.com/envoyproxy/go-control-plane/envoy, v1.40.0 as
// this module requires it) ships protoc-gen-go-vtproto output
// (*_vtproto.pb.go, 664 files) with marshalling methods only
// (MarshalVTStrict, MarshalToVTStrict, MarshalToSizedBufferVTStrict,
// SizeVT), no UnmarshalVT, and those files build only under the
// vtprotobuf build tag. What is read from a response therefore goes
// through proto.Unmarshal's reflection-driven decoder unless a walker
// here takes it.
package protoscan
