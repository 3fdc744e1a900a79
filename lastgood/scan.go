package lastgood

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
	// change set that was being written (or is unreadable) and is left
	// out.
	end int64
}

// scan reads a whole file. It fails only when the header does not check
// out; anything after the header that does not is left out: a
// resource of the snapshot alone (counted in corrupt), or a change set
// and every one after it.
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

// scanChangeSets applies the change sets after the snapshot, each only
// once its commit is read, and stops at the first record that does not
// check out.
func (sc *scanned) scanChangeSets(data []byte, off int64) {
	var (
		ops     []op
		defined map[uint64]source // sources of the change set being read
		records uint64
		version string
	)
	lookup := func(id uint64) (source, bool) {
		if s, ok := sc.sources[id]; ok {
			return s, true
		}
		s, ok := defined[id]
		return s, ok
	}
	for off < int64(len(data)) {
		r, ok, checked := readRecord(data, off)
		if !ok || !checked {
			return
		}
		switch r.payload[0] {
		case kindSource:
			id, s, ok := decodeSource(r.payload)
			if prev, dup := lookup(id); !ok || (dup && prev != s) {
				return
			}
			if defined == nil {
				defined = map[uint64]source{}
			}
			defined[id] = s
		case kindPut:
			p, ok := decodePut(r.payload, version)
			if !ok {
				return
			}
			version = p.version
			s, ok := lookup(p.source)
			if !ok {
				return
			}
			ops = append(ops, op{
				k: key{authority: s.authority, typeURL: s.typeURL, name: p.name},
				e: entry{off: r.off, size: r.size, put: p},
			})
		case kindDelete:
			k, ok := decodeDelete(r.payload)
			if !ok {
				return
			}
			ops = append(ops, op{k: k, delete: true})
		case kindCommit:
			n, ok := decodeCommit(r.payload)
			if !ok || n != records {
				return
			}
			for id, s := range defined {
				sc.sources[id] = s
			}
			for _, o := range ops {
				if o.delete {
					delete(sc.entries, o.k)
				} else {
					sc.entries[o.k] = o.e
				}
			}
			ops, defined, records = ops[:0], nil, 0
			sc.end = off + int64(r.size)
			off = sc.end
			continue
		default:
			return
		}
		records++
		off += int64(r.size)
	}
}
