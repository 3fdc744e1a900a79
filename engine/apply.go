package engine

import (
	"bytes"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"

	"github.com/xdsengine/xdsengine/engine/internal/wire"
	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/registry"
)

// This file is the second stage of the response path: a response the wire
// package has decoded is applied to the cache, in critical sections of
// wire.ApplyPart resources.
// The watcher notifications it schedules hold the response's gate; they
// run, as the third stage, outside the lock.

// ApplyResourcesLocked applies resources of a decoded response: valid
// ones update the cache, invalid ones are data errors.
func (c *channel) ApplyResourcesLocked(r *wire.Response, part []wire.Resource, gate *wire.Gate) {
	e := c.e
	typeURL := r.Type.TypeURL
	c.beginApplyLocked(r)
	for i := range part {
		res := &part[i]
		if res.Unchanged {
			// StillHeldLocked vouched for it in stage 1, and the lock has
			// been released since: whatever changed the entry meanwhile
			// (an error, a drop, a removal, another server's value) shows
			// in it, so the check is made again.
			if en := res.Held.(*entry); c.stillHoldsLocked(en, res.Raw) {
				en.version, en.updated = r.Version, r.Received
				c.coverLocked(en)
				continue
			}
			// Applied as any resource whose value the cache supplied.
			// Raw is the bytes the entry held, which nobody modifies.
			res.Unchanged = false
		}
		en := heldEntry(res.Held)
		if en == nil || en.name != res.Key {
			_, en = e.lookupEntryLocked(typeURL, res.Key)
		}
		if en == nil {
			res.Held = nil
			c.applyMemberLocked(typeURL, res.Key, res.Value, res.Version, res.Err)
			continue
		}
		// Whatever becomes of the resource, the entry is where the next
		// response most likely has it at this index.
		res.Held = en
		c.coverLocked(en)
		version := r.Version
		if res.Version != "" {
			version = res.Version // incremental: the resource's own, valid or not
		}
		if res.Err != nil {
			nack := e.newError(KindNACK, codes.InvalidArgument, en, c, fmt.Errorf("invalid resource: %w", res.Err))
			e.onDataErrorLocked(en, nack, features.ReasonNACK, version, c, gate)
			continue
		}
		e.onValidLocked(en, res.Value, res.Raw, res.Hash, res.Wrapper, version, r.Received, c, gate)
		if c.stillHoldsLocked(en, en.raw) {
			res.Raw = en.raw
		}
	}
}

// heldEntry returns the entry a Resource.Held is a handle on, if it is
// still in the cache: the one a lookup of its name finds. Its name is
// the caller's to compare; its type is the response's, since a stream
// hands back the handles of a type's last response with the next one.
func heldEntry(held any) *entry {
	en, _ := held.(*entry)
	if en == nil || en.removed {
		return nil
	}
	return en
}

// beginApplyLocked starts the count and the mark of the entries r names,
// unless r is already being applied.
func (c *channel) beginApplyLocked(r *wire.Response) {
	if c.applying != r {
		c.e.coverMarks++
		c.applying, c.applyingShape, c.applyingCovered, c.applyingMark = r, c.e.shapeGen, 0, c.e.coverMarks
		c.applyingActive = c.e.activeGen
	}
}

// coverLocked counts and marks en as named by the response being applied,
// if it belongs to an authority this channel serves.
func (c *channel) coverLocked(en *entry) {
	if a := en.auth; a.active() == c {
		c.applyingCovered++
		en.coveredBy = c.applyingMark
		if c.markFor != a || c.markType != en.typ || c.markShape != c.e.shapeGen {
			// A lookup by type URL for every resource costs what the
			// move does; the order found stays while no entry comes or
			// goes.
			c.markFor, c.markType, c.markShape = a, en.typ, c.e.shapeGen
			c.markOrder = a.marked[en.typ.TypeURL]
		}
		c.markOrder.moveToFront(en)
	}
}

// namedAllLocked reports whether r, now applied, named every entry of its
// type in the authorities this channel serves, so that it deletes
// nothing. It is sure only if no entry came or went and no authority
// changed servers since r began: each counted name is one entry, and
// names are not repeated in a response.
func (c *channel) namedAllLocked(r *wire.Response) bool {
	if c.applying != r || c.applyingShape != c.e.shapeGen {
		return false
	}
	total := 0
	for a := range c.auths {
		if a.active() == c {
			total += len(a.resources[r.Type.TypeURL])
		}
	}
	return c.applyingCovered == total
}

// StillHeldLocked: see wire.Host.
func (c *channel) StillHeldLocked(held any, heldRaw []byte) (name, key string, value registry.Resource, ok bool) {
	en, _ := held.(*entry)
	if en == nil || !c.stillHoldsLocked(en, heldRaw) {
		return "", "", nil, false
	}
	return en.name, en.name, en.value, true
}

// stillHoldsLocked reports whether en holds exactly the bytes raw (the
// same array, not only equal bytes) as an accepted value from c, with no
// error or ambient error: re-sent unchanged, it only takes the new
// version. A removed or dropped entry holds no bytes.
func (c *channel) stillHoldsLocked(en *entry, raw []byte) bool {
	return en.value != nil && en.source == c && en.state == StateACKed && en.fail == nil &&
		en.wrapper == "" && len(raw) > 0 && len(en.raw) == len(raw) && &en.raw[0] == &raw[0]
}

// FinishLocked completes a response once its resources are applied: TP3
// errors move their entries to RECEIVED_ERROR and, for types whose SotW
// responses carry every resource, what is missing from a response that
// named everything has been deleted.
func (c *channel) FinishLocked(r *wire.Response, gate *wire.Gate) {
	typeURL := r.Type.TypeURL
	// A response with no resource to apply starts here.
	c.beginApplyLocked(r)
	for _, re := range r.Errors {
		c.applyResourceErrorLocked(typeURL, re, r.Version, gate)
	}
	if r.Type.AllResourcesRequiredInSotW && r.Complete && !c.namedAllLocked(r) {
		c.applyDeletionsLocked(r, gate)
	}
	c.applying = nil
	for _, key := range r.Removed {
		c.applyRemovalLocked(typeURL, key, r.Version, gate)
	}
	if r.Accepted {
		c.versions[typeURL] = r.Version
	}
	if c.reconnected {
		c.clearConnectivityErrorsLocked(gate)
	}
	if len(c.globsTouched) > 0 {
		c.deliverGlobsLocked(r.Version, r.Received, gate)
	}
	c.e.metrics.resourceUpdates(c, r.Type, r.Valid, r.Invalid)
	// The response's notices are all made: let the gate, and the notices
	// already run, go.
	c.e.noticeGate, c.e.notices = nil, nil
}

// applyResourceErrorLocked applies an xRFC TP3 entry. NOT_FOUND and
// PERMISSION_DENIED are data errors, subject to the server's error
// policy; other codes are transient and never drop the cache (A88).
func (c *channel) applyResourceErrorLocked(typeURL string, re wire.ResourceError, version string, gate *wire.Gate) {
	e := c.e
	_, en := e.lookupEntryLocked(typeURL, re.Key)
	if en == nil {
		return
	}
	c.coverLocked(en)
	code := codes.Code(re.Code)
	err := e.newError(KindServerReported, code, en, c, fmt.Errorf("xDS server reported %s: %s", code, re.Message))
	e.onDataErrorLocked(en, err, features.ReasonServerReported, version, c, gate)
}

// applyDeletionsLocked handles SotW deletion for all-resources-required
// types (LDS, CDS): a cached resource missing from a response of the
// authority's active server has been deleted. The caller makes sure every
// resource of the response was named. The entries the response marked as
// named (coverLocked) were moved to the front of their authority's marked
// order as they were marked, so while no authority changed servers the
// others are behind them, and only those are looked at: a walk of every
// entry of a large cache under the lock was the longest hold of it once
// a response named fewer entries than were watched. A map of the
// response's names is built only for an unmarked entry holding a value,
// usually a deletion.
func (c *channel) applyDeletionsLocked(r *wire.Response, gate *wire.Gate) {
	typeURL := r.Type.TypeURL
	ordered := c.applyingActive == c.e.activeGen
	var named map[string]bool
	for _, a := range c.authsSortedLocked() {
		if a.active() != c {
			continue
		}
		if !ordered {
			for _, en := range a.resources[typeURL] {
				c.maybeDeletedLocked(r, en, &named, gate)
			}
			continue
		}
		o := a.marked[typeURL]
		if o == nil {
			continue
		}
		for en := o.back; en != nil && en.coveredBy != c.applyingMark; {
			prev := en.prevMarked
			c.maybeDeletedLocked(r, en, &named, gate)
			en = prev
		}
	}
}

// maybeDeletedLocked reports en deleted unless r marked it, it holds no
// value, or r named it after all: its authority moved to this server
// while r was applied (A71), or the entry is newer than its part. named
// is r's names, built on first use.
func (c *channel) maybeDeletedLocked(r *wire.Response, en *entry, named *map[string]bool, gate *wire.Gate) {
	if en.coveredBy == c.applyingMark || en.value == nil || en.state == StateDoesNotExist {
		return
	}
	if *named == nil {
		*named = r.NamedKeys()
	}
	if (*named)[en.name] {
		return
	}
	e := c.e
	err := e.newError(KindDeleted, codes.NotFound, en, c, errors.New("resource deleted by the xDS server"))
	e.onDataErrorLocked(en, err, features.ReasonDeletion, r.Version, c, gate)
}

// applyRemovalLocked handles a name an incremental response removed: a
// deletion, for any type, by A88's rules (kept and reported as ambient
// unless the server's features drop it); for a resource never received,
// the server's word that it does not exist.
func (c *channel) applyRemovalLocked(typeURL, key, version string, gate *wire.Gate) {
	e := c.e
	a, en := e.lookupEntryLocked(typeURL, key)
	if en == nil {
		c.applyMemberLocked(typeURL, key, nil, "", nil)
		return
	}
	if a.active() != c || en.state == StateDoesNotExist {
		return
	}
	err := e.newError(KindDeleted, codes.NotFound, en, c, errors.New("resource deleted by the xDS server"))
	e.onDataErrorLocked(en, err, features.ReasonDeletion, version, c, gate)
}

// ResourceVersionsLocked returns the versions of the resources of a type
// cached from this server, for an incremental stream's first request.
func (c *channel) ResourceVersionsLocked(typeURL string) map[string]string {
	var versions map[string]string
	for a := range c.auths {
		for key, en := range a.resources[typeURL] {
			if en.orphaned || en.value == nil || en.source != c {
				continue
			}
			if versions == nil {
				versions = make(map[string]string)
			}
			if en.glob != nil && en.glob.members != nil {
				// A glob collection: its members are what the server
				// knows by name.
				for m, v := range en.glob.memberVersions {
					versions[m] = v
				}
				continue
			}
			if en.version != "" {
				versions[key] = en.version
			}
		}
	}
	return versions
}

// UnreadableLocked tells the watchers of a NACKed, unreadable response's
// type why their server's updates are not arriving. Nothing is dropped.
func (c *channel) UnreadableLocked(u wire.Unreadable, gate *wire.Gate) {
	e := c.e
	e.metrics.unreadableResponse(c, u.TypeURL)
	if u.Type == nil {
		return
	}
	e.metrics.resourceUpdates(c, *u.Type, 0, 1)
	for _, a := range c.authsSortedLocked() {
		if a.active() != c {
			continue
		}
		for _, en := range a.resources[u.TypeURL] {
			if en.orphaned {
				continue
			}
			err := e.newError(KindNACK, codes.InvalidArgument, en, c, u.Err)
			e.onUnattributedNACKLocked(en, err, gate)
		}
	}
}

// CachedLocked finds the resource cached from this server with exactly
// raw's bytes and wrapper name: by the wrapper's name, by the name its
// type's NameField holds, or else by the bytes' hash. The entry it finds
// is handed back whatever it holds, as where ApplyResourcesLocked looks
// first (which checks it has the resource's key): on a stream's first
// response, which has no handles from a last one, that spares a second
// lookup of each new resource.
func (c *channel) CachedLocked(typeURL, wrapper string, hash uint64, raw []byte, held any) (string, registry.Resource, any, bool) {
	e := c.e
	var en *entry
	switch typ := e.types[typeURL]; {
	case typ == nil:
		return "", nil, nil, false
	case wrapper != "":
		_, en = e.lookupEntryLocked(typeURL, wrapper)
	case typ.NameField != 0:
		if name, ok := typ.ReadName(raw); ok {
			if en = heldEntry(held); en == nil || en.name != string(name) {
				en = e.entryByNameLocked(typeURL, name)
			}
		}
	default:
		en = e.byContent[contentKey{typ, hash}]
	}
	if en == nil {
		return "", nil, nil, false
	}
	if en.value == nil || en.source != c || en.wrapper != wrapper ||
		// Hashes under one seed that differ rule out equal bytes
		// without reading the cached ones: in a large cache, a miss
		// saved.
		(hash != 0 && en.rawHash != 0 && hash != en.rawHash) || !bytes.Equal(en.raw, raw) {
		return "", nil, en, false
	}
	return en.name, en.value, en, true
}

// ResolveName returns the cache key of a resource name.
func (c *channel) ResolveName(typeURL, name string) (string, error) {
	_, key, err := c.e.resolveName(typeURL, name)
	if err != nil {
		return "", err.Err
	}
	return key, nil
}
