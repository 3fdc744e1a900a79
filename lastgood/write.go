package lastgood

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/xdsengine/xdsengine/engine/storage"
)

// minSlack is how far a small file may grow past its compacted size
// before it is rewritten, so that a store of a few resources is not
// rewritten at every change set.
const minSlack = 64 << 10

// maxKeptBuffer bounds the encoding buffer a Store keeps between change
// sets.
const maxKeptBuffer = 4 << 20

// limit is the largest the file may grow to, when it would be compacted
// bytes long if rewritten and holds raw bytes of resources: 1.5 times
// raw (the disk bound); or, for resources so small that their keys and
// versions alone take more than half their size again, 1.25 times
// compacted; or, for small stores, minSlack more than compacted.
func limit(compacted, raw int64) int64 {
	return max(raw+raw/2, compacted+compacted/4, compacted+minSlack)
}

// Apply writes a change set: appended to the file, or, when that would
// take the file past 1.5 times its compacted size (or when digest is not
// the store's), by writing the whole file anew beside it and renaming it
// over the store. Either way a crash leaves the store as before the
// change set or as after it. With another digest than the store's, the
// store's content is replaced by the change set's resources.
func (s *Store) Apply(digest []byte, changes []storage.Change) error {
	if err := checkApply(digest, changes); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opened = nil
	switch {
	case s.closed:
		return ErrClosed
	case s.readOnly:
		return ErrReadOnly
	case !bytes.Equal(digest, s.digest):
		return s.rewrite(digest, false, changes)
	case len(changes) == 0:
		return nil
	case s.needRewrite:
		return s.rewrite(digest, true, changes)
	}
	return s.appendChanges(changes)
}

func checkApply(digest []byte, changes []storage.Change) error {
	if len(digest) > maxDigestLen {
		return fmt.Errorf("lastgood: Apply: the digest has %d bytes; at most %d", len(digest), maxDigestLen)
	}
	for i := range changes {
		c := &changes[i]
		if c.TypeURL == "" {
			return fmt.Errorf("lastgood: Apply: changes[%d].TypeURL: must not be empty", i)
		}
		if !c.Delete && len(c.Raw)+len(c.Name)+len(c.Version)+64 > maxRecordLen {
			return fmt.Errorf("lastgood: Apply: changes[%d].Raw: %d bytes; a resource is kept only up to %d",
				i, len(c.Raw), maxRecordLen-64)
		}
	}
	return nil
}

func (s *Store) appendChanges(changes []storage.Change) error {
	// First what the change set would add, to decide between appending
	// and rewriting before encoding anything.
	slots := s.slots[:0] // of the resources changes name, nil for new ones
	defer func() { s.keepSlots(slots) }()
	var added map[source]uint64 // sources this change set defines
	batch := 2 * markLen        // its begin and commit records
	// How much the compacted file and the resources' bytes grow, near
	// enough to decide.
	grow, growRaw := int64(0), int64(0)
	for i := range changes {
		c := &changes[i]
		sl := s.index.get(key{authority: c.Authority, typeURL: c.TypeURL, name: c.Name})
		slots = append(slots, sl)
		if sl != nil {
			grow -= int64(sl.size)
			growRaw -= int64(sl.raw)
		}
		if c.Delete {
			batch += deleteLen(c.Authority, c.TypeURL, c.Name)
			continue
		}
		src := source{authority: c.Authority, server: c.Server, typeURL: c.TypeURL}
		id, ok := s.sourceIDs[src]
		if !ok {
			id, ok = added[src]
		}
		if !ok {
			id = s.nextSource + uint64(len(added))
			if added == nil {
				added = map[source]uint64{}
			}
			added[src] = id
			n := len(appendSource(nil, id, src))
			batch += n
			grow += int64(n)
		}
		n := putLen(id, c.Name, c.Version, len(c.Raw))
		batch += n
		grow += int64(n)
		growRaw += int64(len(c.Raw))
	}
	if s.size+int64(batch) > limit(s.compacted()+grow, s.raw+growRaw) {
		return s.rewrite(s.digest, true, changes)
	}

	b := slices.Grow(s.buf[:0], batch)
	locs := slices.Grow(s.locs[:0], len(changes))[:len(changes)] // of the put records
	defer func() {
		if cap(locs) <= maxKeptBuffer/32 {
			s.locs = locs[:0]
		}
	}()
	b = appendMark(b, kindBegin, 0, 0) // filled in once the length is known
	defined := make(map[source]bool, len(added))
	for i := range changes {
		c := &changes[i]
		if c.Delete {
			b = appendDelete(b, key{authority: c.Authority, typeURL: c.TypeURL, name: c.Name})
			continue
		}
		src := source{authority: c.Authority, server: c.Server, typeURL: c.TypeURL}
		id, ok := s.sourceIDs[src]
		if !ok {
			id = added[src]
			if !defined[src] {
				b = appendSource(b, id, src)
				defined[src] = true
			}
		}
		start := len(b)
		b = appendPut(b, put{source: id, name: c.Name, version: c.Version, received: nanosFromTime(c.Received), expires: nanosFromTime(c.Expires), raw: c.Raw})
		locs[i] = at{off: s.size + int64(start), size: len(b) - start, raw: len(c.Raw), source: id}
	}
	b = appendMark(b, kindCommit, uint64(len(b)+markLen), uint64(len(changes)))
	appendMark(b[:0], kindBegin, uint64(len(b)), uint64(len(changes))) // in place of the blank one
	if cap(b) <= maxKeptBuffer {
		s.buf = b
	}
	_, err := s.f.WriteAt(b, s.size)
	if err == nil {
		err = s.f.Sync()
	}
	if err != nil {
		// No change set may follow a torn one, and after a failed sync the
		// file's pages are in doubt: cut the file back and have the next
		// change set write it anew.
		_ = s.f.Truncate(s.size)
		s.needRewrite = true
		return fmt.Errorf("lastgood: writing a change set to %s: %w", s.path, err)
	}
	for src, id := range added {
		s.addSource(id, src)
	}
	for i := range changes {
		c := &changes[i]
		k := key{authority: c.Authority, typeURL: c.TypeURL, name: c.Name}
		if c.Delete {
			s.remove(slots[i], k)
		} else {
			s.set(slots[i], k, locs[i])
		}
	}
	s.size += int64(len(b))
	return nil
}

// keepSlots keeps the slots' buffer for the next change set, unless it
// grew large.
func (s *Store) keepSlots(slots []*slot) {
	if cap(slots) <= maxKeptBuffer/8 {
		clear(slots)
		s.slots = slots[:0]
	}
}
