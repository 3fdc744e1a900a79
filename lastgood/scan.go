package lastgood

import "fmt"

// entry is a resource found in the file: where its put record is, and
// the record decoded (its raw bytes point into the bytes scanned).
type entry struct {
	off  int64
	size int
	put  put
}

// scanned is what a file holds.
type scanned struct {
	header    header
	headerLen int
	entries   map[key]entry
	sources   map[uint64]source
	// corrupt counts the snapshot's resources that could not be read
	// back whole.
	corrupt int
	// damaged reports that the snapshot was not read whole: records
	// whose checksum failed, or a snapshot cut short.
	damaged bool
	// end is where the last whole change set ends: what follows it is a
	// change set that was being written and is left out, unless broken.
	end int64
	// broken, when not nil, is the committed change set at end that does
	// not check out: corruption, not a crash.
	broken *breakage
}

// breakage is a committed change set that does not check out.
type breakage struct {
	off int64
	why string
	// lost counts the changes of it and of the change sets after it,
	// which are left out with it.
	lost int
}

// scan reads a whole file. It fails only when the header does not check
// out; anything after the header that does not is left out: a
// resource of the snapshot alone (counted in corrupt), or a committed
// change set and every one after it (broken). A change set cut short is
// left out too, as a crash leaves it.
func scan(data []byte) (*scanned, error) {
	h, n, err := parseHeader(data)
	if err != nil {
		return nil, err
	}
	sc := &scanned{
		header:    h,
		headerLen: n,
		entries:   make(map[key]entry, h.snapshotPuts),
		sources:   map[uint64]source{},
	}
	// The snapshot is written whole before the file takes the store's
	// name, so a file shorter than it was cut.
	snapEnd := min(h.snapshotEnd, int64(len(data)))
	sc.scanSnapshot(data, int64(n))
	sc.end = snapEnd
	// After a damaged snapshot the change sets still apply: what they
	// change is as they left it, and what was lost stays lost (a change
	// set that names a lost source is not applied).
	sc.scanChangeSets(data, snapEnd)
	return sc, nil
}

// scanSnapshot reads the records of the snapshot. Each is found by the
// snapshot's index, so a record that does not check out (even in its
// size) costs only itself; without an index that checks out, they are
// read one after the other, up to the first whose size is not
// possible.
func (sc *scanned) scanSnapshot(data []byte, start int64) {
	end := min(sc.header.indexOff, int64(len(data)))
	var records []record
	if sizes, ok := sc.readIndex(data, start); ok {
		records = make([]record, 0, len(sizes))
		off := start
		for _, n := range sizes {
			r, ok, checked := readRecord(data[:off+int64(n)], off)
			if ok && checked && r.size == n {
				records = append(records, r)
			} else {
				sc.damaged = true
			}
			off += int64(n)
		}
	} else {
		sc.damaged = true
		for off := start; off < end; {
			r, ok, checked := readRecord(data[:end], off)
			if !ok {
				break
			}
			if checked {
				records = append(records, r)
			}
			off += int64(r.size)
		}
	}
	puts := make([]entry, 0, len(records))
	version := ""
	for _, r := range records {
		switch r.payload[0] {
		case kindSource:
			id, s, ok := decodeSource(r.payload)
			if prev, dup := sc.sources[id]; !ok || (dup && prev != s) {
				sc.damaged = true
				continue
			}
			sc.sources[id] = s
		case kindPut:
			p, ok := decodePut(r.payload, version)
			if !ok {
				sc.damaged = true
				continue
			}
			version = p.version
			puts = append(puts, entry{off: r.off, size: r.size, put: p})
		default:
			sc.damaged = true
		}
	}
	good := 0
	for _, e := range puts {
		s, ok := sc.sources[e.put.source]
		if !ok {
			sc.damaged = true
			continue
		}
		good++
		sc.entries[key{authority: s.authority, typeURL: s.typeURL, name: e.put.name}] = e
	}
	if want := int(sc.header.snapshotPuts); good < want {
		sc.corrupt = want - good
		sc.damaged = true
	}
}

// readIndex returns the sizes of the snapshot's records, from its index
// record, if that checks out and describes the snapshot exactly.
func (sc *scanned) readIndex(data []byte, start int64) ([]int, bool) {
	h := sc.header
	if h.snapshotEnd > int64(len(data)) {
		return nil, false
	}
	r, ok, checked := readRecord(data[:h.snapshotEnd], h.indexOff)
	if !ok || !checked || r.payload[0] != kindIndex || r.off+int64(r.size) != h.snapshotEnd {
		return nil, false
	}
	sizes, ok := decodeIndex(r.payload, int(h.indexOff-start))
	if !ok {
		return nil, false
	}
	total := int64(0)
	for _, n := range sizes {
		total += int64(n)
	}
	return sizes, start+total == h.indexOff
}

// op is one change of a change set being read.
type op struct {
	k      key
	e      entry
	delete bool
}

// changeSet is a change set read whole: what it defines and changes.
type changeSet struct {
	length  int64
	defined map[uint64]source
	ops     []op
}

// scanChangeSets applies the change sets after the snapshot, in order.
// It stops at the first that is not whole: one cut short by a crash is
// left out, as is space never written (zeros); one whose commit record
// is in the file but that does not check out is corruption, and it and
// those after it are left out and counted (broken).
func (sc *scanned) scanChangeSets(data []byte, off int64) {
	var ops []op // reused from one change set to the next
	for off < int64(len(data)) {
		cs, why := sc.readChangeSet(data, off, ops[:0])
		if why == "" && cs.length == 0 {
			return // cut short
		}
		if why != "" {
			sc.broken = &breakage{off: off, why: why, lost: countLost(data, off)}
			return
		}
		for id, s := range cs.defined {
			sc.sources[id] = s
		}
		for _, o := range cs.ops {
			if o.delete {
				delete(sc.entries, o.k)
			} else {
				sc.entries[o.k] = o.e
			}
		}
		ops = cs.ops
		off += cs.length
		sc.end = off
	}
}

// readChangeSet reads the change set at off, appending its changes to
// ops. It returns the change set read whole; a zero one, and no reason,
// when the file ends before its commit record (a crash cut it short, and
// it was never committed); or why it does not check out although the
// file holds it whole, which a crash cannot do: a writer appends a change
// set in one write, so what a crash leaves of one is a prefix of its
// bytes, and the file holds its commit record only once every byte
// before it was written.
func (sc *scanned) readChangeSet(data []byte, off int64, ops []op) (changeSet, string) {
	rest := data[off:]
	length, changes, ok := readMark(rest, kindBegin)
	switch {
	case !ok && (len(rest) < markLen || allZero(rest)):
		// The begin record cut short, or space the file system extended
		// the file by and that was never written.
		return changeSet{}, ""
	case !ok:
		return changeSet{}, "its begin record does not check out"
	case length < 2*markLen || changes == 0:
		return changeSet{}, "its begin record states an impossible length or number of changes"
	case length > uint64(len(rest)):
		return changeSet{}, ""
	}
	set := rest[:length]
	if l, n, ok := readMark(set[length-markLen:], kindCommit); !ok || l != length || n != changes {
		return changeSet{}, "its commit record does not check out"
	}
	body := set[:length-markLen]
	cs := changeSet{length: int64(length), ops: ops}
	lookup := func(id uint64) (source, bool) {
		if s, ok := sc.sources[id]; ok {
			return s, true
		}
		s, ok := cs.defined[id]
		return s, ok
	}
	version := ""
	for at := int64(markLen); at < int64(len(body)); {
		r, ok, checked := readRecord(body, at)
		if !ok || !checked {
			return changeSet{}, fmt.Sprintf("its record at %d does not check out", off+at)
		}
		switch r.payload[0] {
		case kindSource:
			id, s, ok := decodeSource(r.payload)
			if prev, dup := lookup(id); !ok || (dup && prev != s) {
				return changeSet{}, fmt.Sprintf("its source record at %d does not decode, or redefines a source", off+at)
			}
			if cs.defined == nil {
				cs.defined = map[uint64]source{}
			}
			cs.defined[id] = s
		case kindPut:
			p, ok := decodePut(r.payload, version)
			if !ok {
				return changeSet{}, fmt.Sprintf("its put record at %d does not decode", off+at)
			}
			version = p.version
			s, ok := lookup(p.source)
			if !ok {
				// Sources are written before the resources that name them:
				// this one was in a record of the snapshot that was lost.
				return changeSet{}, fmt.Sprintf("its put record at %d names a source the store does not hold", off+at)
			}
			cs.ops = append(cs.ops, op{
				k: key{authority: s.authority, typeURL: s.typeURL, name: p.name},
				e: entry{off: off + r.off, size: r.size, put: p},
			})
		case kindDelete:
			k, ok := decodeDelete(r.payload)
			if !ok {
				return changeSet{}, fmt.Sprintf("its delete record at %d does not decode", off+at)
			}
			cs.ops = append(cs.ops, op{k: k, delete: true})
		default:
			return changeSet{}, fmt.Sprintf("its record at %d is of no kind a change set holds", off+at)
		}
		at += int64(r.size)
	}
	if uint64(len(cs.ops)) != changes {
		return changeSet{}, fmt.Sprintf("it holds %d changes; its begin record states %d", len(cs.ops), changes)
	}
	return cs, ""
}

// countLost counts the changes of the change sets from off on, the first
// of which does not check out: from their begin records, up to one cut
// short. A change set whose begin record does not check out counts as
// one change, and ends the count: where the next one begins is unknown.
func countLost(data []byte, off int64) int {
	lost := 0
	for off < int64(len(data)) {
		rest := data[off:]
		length, changes, ok := readMark(rest, kindBegin)
		if !ok || length < 2*markLen || changes == 0 {
			if len(rest) >= markLen && !allZero(rest) {
				lost++
			}
			break
		}
		if length > uint64(len(rest)) {
			break // cut short: never committed
		}
		lost += int(min(changes, length/frameLen))
		off += int64(length)
	}
	return max(lost, 1)
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
