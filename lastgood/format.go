package lastgood

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
)

// FormatVersion is the version of the file format this package writes
// and reads. A file of another version is moved aside, not read.
//
// Version 2 opens each change set with a begin record that states its
// length, so that a reader tells a change set cut short by a crash from a
// committed one that was damaged (version 1 could not).
const FormatVersion = 2

// The file, all integers little-endian:
//
//	header:  magic [8]byte "LASTGOOD", version u32, flags u32 (0),
//	         snapshotEnd u64, indexOff u64, snapshotPuts u32,
//	         digest length u32, digest, crc u32 (CRC-32C of everything
//	         before it)
//	records: size u32, crc u32 (CRC-32C of size and payload), payload
//
// A payload begins with its kind:
//
//	'S' source:  id uvarint, authority, server, type URL
//	'P' put:     source id uvarint, name, version, received i64 and
//	             expires i64 (Unix nanoseconds, 0 for none), the
//	             resource's bytes (the rest)
//	'D' delete:  authority, type URL, name
//	'B' begin:   length u64 (the change set's bytes, from its begin
//	             record to the end of its commit record), changes u64
//	             (its puts and deletes)
//	'C' commit:  the same two as its begin
//	'I' index:   the number of records of the snapshot, and the size of
//	             each (uvarints)
//
// Strings are a uvarint length and the bytes. The records between the
// header and snapshotEnd are the snapshot written with the header:
// sources and puts (snapshotPuts of them), then the index, at indexOff,
// which lets a reader find each record even when another's size is
// corrupt. After the snapshot come change sets: a begin record, sources,
// puts and deletes, a commit record. Begin and commit records have a
// fixed length (markLen), so that where a change set's commit is, and
// whether the file holds it, follows from its begin record alone, however
// damaged the records between them.
const (
	magic        = "LASTGOOD"
	headerFixed  = 8 + 4 + 4 + 8 + 8 + 4 + 4 // up to the digest
	frameLen     = 8                         // size and crc of a record
	maxDigestLen = 1024
	// maxRecordLen bounds one record, so that a corrupt size cannot make
	// the reader allocate or skip absurdly; Apply refuses larger
	// resources with an error.
	maxRecordLen = 1 << 30

	kindSource = 'S'
	kindPut    = 'P'
	kindDelete = 'D'
	kindBegin  = 'B'
	kindCommit = 'C'
	kindIndex  = 'I'
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// header is what the file's header holds.
type header struct {
	digest       []byte
	snapshotEnd  int64
	indexOff     int64
	snapshotPuts uint32
}

func headerLen(digest []byte) int { return headerFixed + len(digest) + 4 }

func appendHeader(b []byte, h header) []byte {
	start := len(b)
	b = append(b, magic...)
	b = binary.LittleEndian.AppendUint32(b, FormatVersion)
	b = binary.LittleEndian.AppendUint32(b, 0)
	b = binary.LittleEndian.AppendUint64(b, uint64(h.snapshotEnd))
	b = binary.LittleEndian.AppendUint64(b, uint64(h.indexOff))
	b = binary.LittleEndian.AppendUint32(b, h.snapshotPuts)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(h.digest)))
	b = append(b, h.digest...)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b[start:], castagnoli))
}

var (
	errBadMagic   = errors.New("not a lastgood store (bad magic bytes)")
	errBadHeader  = errors.New("header does not check out (checksum, length or offsets)")
	errBadVersion = errors.New("unsupported format version")
)

// parseHeader reads the header at the start of data and returns it with
// its length.
func parseHeader(data []byte) (header, int, error) {
	if n := min(len(data), len(magic)); string(data[:n]) != magic[:n] {
		return header{}, 0, errBadMagic
	}
	if len(data) < headerFixed+4 {
		return header{}, 0, errBadHeader
	}
	dlen := binary.LittleEndian.Uint32(data[headerFixed-4 : headerFixed])
	if dlen > maxDigestLen || len(data) < headerFixed+int(dlen)+4 {
		return header{}, 0, errBadHeader
	}
	end := headerFixed + int(dlen)
	if crc32.Checksum(data[:end], castagnoli) != binary.LittleEndian.Uint32(data[end:end+4]) {
		return header{}, 0, errBadHeader
	}
	if v := binary.LittleEndian.Uint32(data[8:12]); v != FormatVersion {
		return header{}, 0, fmt.Errorf("%w %d (this package reads %d)", errBadVersion, v, FormatVersion)
	}
	h := header{
		digest:       append([]byte(nil), data[headerFixed:end]...),
		snapshotPuts: binary.LittleEndian.Uint32(data[32:36]),
	}
	n := end + 4
	snapEnd := binary.LittleEndian.Uint64(data[16:24])
	indexOff := binary.LittleEndian.Uint64(data[24:32])
	if snapEnd < uint64(n) || snapEnd > math.MaxInt64 || indexOff < uint64(n) || indexOff > snapEnd {
		return header{}, 0, errBadHeader
	}
	h.snapshotEnd, h.indexOff = int64(snapEnd), int64(indexOff)
	return h, n, nil
}

// beginRecord appends a record's frame, to be completed by endRecord
// once the payload is appended after it.
func beginRecord(b []byte) ([]byte, int) {
	return append(b, 0, 0, 0, 0, 0, 0, 0, 0), len(b)
}

func endRecord(b []byte, start int) []byte {
	binary.LittleEndian.PutUint32(b[start:], uint32(len(b)-start-frameLen))
	crc := crc32.Checksum(b[start:start+4], castagnoli)
	crc = crc32.Update(crc, castagnoli, b[start+frameLen:])
	binary.LittleEndian.PutUint32(b[start+4:], crc)
	return b
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// source is what the resources of one server's type in one authority
// share; records name it by a small id, so that each resource does not
// repeat it.
type source struct {
	authority, server, typeURL string
}

func appendSource(b []byte, id uint64, s source) []byte {
	b, start := beginRecord(b)
	b = append(b, kindSource)
	b = binary.AppendUvarint(b, id)
	b = appendString(b, s.authority)
	b = appendString(b, s.server)
	b = appendString(b, s.typeURL)
	return endRecord(b, start)
}

// put is a decoded put record; its strings and raw point into the
// bytes read.
type put struct {
	source   uint64
	name     string
	version  string
	received int64
	expires  int64 // 0: none
	raw      []byte
}

func appendPut(b []byte, p put) []byte {
	b, start := beginRecord(b)
	b = append(b, kindPut)
	b = binary.AppendUvarint(b, p.source)
	b = appendString(b, p.name)
	b = appendString(b, p.version)
	b = binary.LittleEndian.AppendUint64(b, uint64(p.received))
	b = binary.LittleEndian.AppendUint64(b, uint64(p.expires))
	b = append(b, p.raw...)
	return endRecord(b, start)
}

// putLen and deleteLen are the lengths of the records appendPut and
// appendDelete append.
func putLen(source uint64, name, version string, raw int) int {
	return frameLen + 1 + uvarintLen(source) + stringLen(name) + stringLen(version) + 16 + raw
}

func deleteLen(authority, typeURL, name string) int {
	return frameLen + 1 + stringLen(authority) + stringLen(typeURL) + stringLen(name)
}

func appendDelete(b []byte, k key) []byte {
	b, start := beginRecord(b)
	b = append(b, kindDelete)
	b = appendString(b, k.authority)
	b = appendString(b, k.typeURL)
	b = appendString(b, k.name)
	return endRecord(b, start)
}

// appendIndex appends the index of a snapshot: its records' sizes.
func appendIndex(b []byte, sizes []int) []byte {
	b, start := beginRecord(b)
	b = append(b, kindIndex)
	b = binary.AppendUvarint(b, uint64(len(sizes)))
	for _, n := range sizes {
		b = binary.AppendUvarint(b, uint64(n))
	}
	return endRecord(b, start)
}

// markLen is the length of a begin or a commit record.
const markLen = frameLen + 1 + 8 + 8

// appendMark appends a change set's begin or commit record (kind): the
// change set's length in bytes and its number of changes.
func appendMark(b []byte, kind byte, length, changes uint64) []byte {
	b, start := beginRecord(b)
	b = append(b, kind)
	b = binary.LittleEndian.AppendUint64(b, length)
	b = binary.LittleEndian.AppendUint64(b, changes)
	return endRecord(b, start)
}

// readMark reads a begin or commit record (kind) at the start of data:
// ok is false unless one whole and checked is there.
func readMark(data []byte, kind byte) (length, changes uint64, ok bool) {
	if len(data) < markLen || binary.LittleEndian.Uint32(data) != markLen-frameLen {
		return 0, 0, false
	}
	r, ok, checked := readRecord(data[:markLen], 0)
	if !ok || !checked || r.payload[0] != kind {
		return 0, 0, false
	}
	return binary.LittleEndian.Uint64(r.payload[1:]), binary.LittleEndian.Uint64(r.payload[9:]), true
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

func stringLen(s string) int { return uvarintLen(uint64(len(s))) + len(s) }

// key identifies a resource in the store.
type key struct {
	authority, typeURL, name string
}

// record is one framed record found in the file.
type record struct {
	off     int64 // of its frame
	size    int   // frame and payload
	payload []byte
}

// readRecord reads the record at off. ok is false when no whole record
// fits there (the file ends, or the size is impossible); checked is
// false when one fits but its checksum fails.
func readRecord(data []byte, off int64) (r record, ok, checked bool) {
	rest := data[off:]
	if len(rest) < frameLen {
		return record{}, false, false
	}
	n := binary.LittleEndian.Uint32(rest)
	if n == 0 || n > maxRecordLen || uint64(n) > uint64(len(rest)-frameLen) {
		return record{}, false, false
	}
	r = record{off: off, size: frameLen + int(n), payload: rest[frameLen : frameLen+int(n)]}
	crc := crc32.Checksum(rest[:4], castagnoli)
	crc = crc32.Update(crc, castagnoli, r.payload)
	return r, true, crc == binary.LittleEndian.Uint32(rest[4:8])
}

// decoder reads a payload's fields, remembering the first failure.
type decoder struct {
	b   []byte
	bad bool
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.bad = true
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if d.bad || n > uint64(len(d.b)) {
		d.bad = true
		return nil
	}
	b := d.b[:n]
	d.b = d.b[n:]
	return b
}

func (d *decoder) string() string { return string(d.bytes()) }

func (d *decoder) int64() int64 {
	if len(d.b) < 8 {
		d.bad = true
		return 0
	}
	v := int64(binary.LittleEndian.Uint64(d.b))
	d.b = d.b[8:]
	return v
}

// done reports whether the payload was read whole and well.
func (d *decoder) done() bool { return !d.bad && len(d.b) == 0 }

func decodeSource(payload []byte) (uint64, source, bool) {
	d := decoder{b: payload[1:]}
	id := d.uvarint()
	s := source{authority: d.string(), server: d.string(), typeURL: d.string()}
	return id, s, d.done()
}

// decodePut reads a put record; version, when it equals the version
// read, is returned instead of a new string (the resources of a
// response share theirs).
func decodePut(payload []byte, version string) (put, bool) {
	d := decoder{b: payload[1:]}
	p := put{source: d.uvarint(), name: d.string()}
	if v := d.bytes(); string(v) == version {
		p.version = version
	} else {
		p.version = string(v)
	}
	p.received = d.int64()
	p.expires = d.int64()
	if d.bad {
		return put{}, false
	}
	p.raw = d.b
	return p, true
}

func decodeDelete(payload []byte) (key, bool) {
	d := decoder{b: payload[1:]}
	k := key{authority: d.string(), typeURL: d.string(), name: d.string()}
	return k, d.done()
}

// decodeIndex reads an index's sizes; limit bounds their number (the
// bytes they could describe), so that a corrupt count cannot make the
// reader allocate absurdly.
func decodeIndex(payload []byte, limit int) ([]int, bool) {
	d := decoder{b: payload[1:]}
	n := d.uvarint()
	if d.bad || n > uint64(len(d.b)) || n > uint64(limit) {
		return nil, false
	}
	sizes := make([]int, 0, n)
	for range n {
		v := d.uvarint()
		if d.bad || v < frameLen+1 || v > uint64(limit) {
			return nil, false
		}
		sizes = append(sizes, int(v))
	}
	return sizes, d.done()
}
