package lastgood

// slot is a resource the file holds: where its put record is.
type slot struct {
	k      key
	off    int64
	size   int
	raw    int // the resource's bytes, of size
	source uint64
	// mark is the rewrite that replaces the resource (Store.epoch).
	mark uint64
	// gone is set once the resource is deleted, for a change set that
	// names it again.
	gone bool
}

// at is where a put record is, and what it holds.
type at struct {
	off    int64
	size   int
	raw    int
	source uint64
}

type sourceInfo struct {
	source
	id     uint64
	recLen int // of its record
	refs   int // resources that name it
}

// state is what a writer knows of its file, without the resources'
// bytes.
type state struct {
	index      *index
	sources    map[uint64]*sourceInfo
	sourceIDs  map[source]uint64
	nextSource uint64
	// live is the length of the header, the sources in use and the
	// resources: the file's length if rewritten now, but for the index
	// of their records, which records and indexLen count.
	live     int64
	records  int
	indexLen int64 // the sizes of the records in the index
	// raw is the length of the resources' bytes.
	raw int64
}

func newState(digest []byte) state {
	return state{
		index:     newIndex(),
		sources:   map[uint64]*sourceInfo{},
		sourceIDs: map[source]uint64{},
		live:      int64(headerLen(digest)),
	}
}

// compacted is the length the file would have if rewritten now.
func (st *state) compacted() int64 {
	return st.live + frameLen + 1 + int64(uvarintLen(uint64(st.records))) + st.indexLen
}

// count adds a record of size n to the compacted file (or, with sign -1,
// takes it away).
func (st *state) count(n int, sign int64) {
	st.live += sign * int64(n)
	st.records += int(sign)
	st.indexLen += sign * int64(uvarintLen(uint64(n)))
}

func (st *state) addSource(id uint64, src source) {
	st.sources[id] = &sourceInfo{source: src, id: id, recLen: len(appendSource(nil, id, src))}
	st.sourceIDs[src] = id
	st.nextSource = max(st.nextSource, id+1)
}

// place counts a slot's record, and its source's, in the compacted file;
// unplace takes them away.
func (st *state) place(sl *slot) {
	st.raw += int64(sl.raw)
	st.count(sl.size, 1)
	si := st.sources[sl.source]
	si.refs++
	if si.refs == 1 {
		st.count(si.recLen, 1)
	}
}

func (st *state) unplace(sl *slot) {
	st.raw -= int64(sl.raw)
	st.count(sl.size, -1)
	si := st.sources[sl.source]
	si.refs--
	if si.refs == 0 {
		st.count(si.recLen, -1)
	}
}

// set records that the resource k's put record is where at says; sl, if
// not nil, is its slot, found before.
func (st *state) set(sl *slot, k key, a at) {
	if sl == nil || sl.gone {
		sl = st.index.get(k)
	}
	if sl == nil {
		sl = &slot{k: k}
		st.index.add(sl)
	} else {
		st.unplace(sl)
	}
	sl.off, sl.size, sl.raw, sl.source = a.off, a.size, a.raw, a.source
	st.place(sl)
}

// remove records that the resource k is deleted; sl, if not nil, is its
// slot, found before.
func (st *state) remove(sl *slot, k key) {
	if sl == nil || sl.gone {
		sl = st.index.get(k)
	}
	if sl == nil {
		return
	}
	st.unplace(sl)
	st.index.del(k)
	sl.gone = true
}

// recount counts the compacted file anew, from the slots, and forgets
// the sources no slot names.
func (st *state) recount(digest []byte) {
	st.live, st.records, st.indexLen, st.raw = int64(headerLen(digest)), 0, 0, 0
	for _, si := range st.sources {
		si.refs = 0
	}
	var si *sourceInfo
	for sl := range st.index.all() {
		// Most resources share their source with the one before.
		if si == nil || sl.source != si.id {
			si = st.sources[sl.source]
		}
		st.raw += int64(sl.raw)
		st.count(sl.size, 1)
		if si.refs++; si.refs == 1 {
			st.count(si.recLen, 1)
		}
	}
	for id, si := range st.sources {
		if si.refs == 0 {
			delete(st.sources, id)
			delete(st.sourceIDs, si.source)
		}
	}
}

// adopt takes what a scan of the file found as the writer's state.
func (s *Store) adopt(sc *scanned) {
	s.digest = sc.header.digest
	s.size = sc.end
	s.state = newState(sc.header.digest)
	for id, src := range sc.sources {
		s.addSource(id, src)
	}
	for k, e := range sc.entries {
		s.set(nil, k, at{off: e.off, size: e.size, raw: len(e.put.raw), source: e.put.source})
	}
}
