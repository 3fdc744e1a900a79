package passthrough

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// maxAnyDepth bounds how many Any values deep a walk unpacks. Extension
// configs nest a few levels (a composite filter's, a transport socket
// wrapping another); each level is unmarshaled afresh, so without a
// bound a resource of nested Anys would cost a walk as deep as the
// resource is long.
const maxAnyDepth = 32

// errTooDeep is the error of an Any nested more than maxAnyDepth deep.
var errTooDeep = fmt.Errorf("google.protobuf.Any values nested more than %d deep", maxAnyDepth)

const anyFullName protoreflect.FullName = "google.protobuf.Any"

// visitor is told of what a walk finds.
type visitor interface {
	// message is called for every message of the tree that may be of
	// interest (see reach), the root and unpacked Any payloads included.
	message(m protoreflect.Message, at *path)
	// unpacked is called for an Any whose payload's type is linked, with
	// the payload or, m nil, the reason it was not read: an unmarshal
	// error, or errTooDeep.
	unpacked(typeURL string, m proto.Message, err error, at *path)
}

// path is where a walk is, kept as steps and spelled as a NACK spells it
// ("filter_chains[0].filters[1].typed_config") only when asked.
type path struct{ steps []step }

// step is a field, or an index or map key into the field before it.
type step struct {
	field protoreflect.Name
	index int
	key   protoreflect.MapKey
	kind  stepKind
}

type stepKind int

const (
	fieldStep stepKind = iota
	indexStep
	keyStep
)

func (p *path) push(s step) { p.steps = append(p.steps, s) }
func (p *path) pop()        { p.steps = p.steps[:len(p.steps)-1] }

func (p *path) String() string {
	var b strings.Builder
	for i, s := range p.steps {
		switch s.kind {
		case fieldStep:
			if i > 0 {
				b.WriteByte('.')
			}
			b.WriteString(string(s.field))
		case indexStep:
			b.WriteString("[" + strconv.Itoa(s.index) + "]")
		case keyStep:
			b.WriteString("[" + s.key.String() + "]")
		}
	}
	return b.String()
}

// reach tells which fields of a message type can hold, at any depth, an
// Any or a message of one of its targets, so that a walk skips the
// fields that cannot: most of a resource. It learns each type once and
// is safe for concurrent use.
type reach struct {
	targets map[protoreflect.FullName]bool
	// plans holds, by message descriptor, the fields a walk visits.
	plans sync.Map // protoreflect.MessageDescriptor → []protoreflect.FieldDescriptor
	mu    sync.Mutex
	can   map[protoreflect.FullName]bool // guarded by mu
}

func newReach(targets ...protoreflect.FullName) *reach {
	r := &reach{targets: map[protoreflect.FullName]bool{anyFullName: true}, can: map[protoreflect.FullName]bool{}}
	for _, t := range targets {
		r.targets[t] = true
	}
	return r
}

// fields returns the fields of md a walk visits.
func (r *reach) fields(md protoreflect.MessageDescriptor) []protoreflect.FieldDescriptor {
	if plan, ok := r.plans.Load(md); ok {
		return plan.([]protoreflect.FieldDescriptor)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var plan []protoreflect.FieldDescriptor
	fields := md.Fields()
	for i := 0; i < fields.Len(); i++ {
		if held := heldMessage(fields.Get(i)); held != nil && r.reaches(held) {
			plan = append(plan, fields.Get(i))
		}
	}
	r.plans.Store(md, plan)
	return plan
}

// reaches reports whether a message of md's type can hold a target (or be
// one). The caller holds mu.
func (r *reach) reaches(md protoreflect.MessageDescriptor) bool {
	if can, ok := r.can[md.FullName()]; ok {
		return can
	}
	seen := map[protoreflect.FullName]bool{md.FullName(): true}
	queue := []protoreflect.MessageDescriptor{md}
	found := false
	for len(queue) > 0 && !found {
		next := queue[0]
		queue = queue[1:]
		if r.targets[next.FullName()] || r.can[next.FullName()] {
			found = true
			break
		}
		fields := next.Fields()
		for i := 0; i < fields.Len(); i++ {
			if held := heldMessage(fields.Get(i)); held != nil && !seen[held.FullName()] {
				seen[held.FullName()] = true
				queue = append(queue, held)
			}
		}
	}
	if found {
		r.can[md.FullName()] = true
	} else {
		// Nothing md can hold reaches a target, so neither does any of
		// what it holds.
		for name := range seen {
			r.can[name] = false
		}
	}
	return found
}

// heldMessage returns the type of the messages fd holds (a map's values),
// or nil.
func heldMessage(fd protoreflect.FieldDescriptor) protoreflect.MessageDescriptor {
	if fd.IsMap() {
		return fd.MapValue().Message()
	}
	return fd.Message()
}

// walk visits m and the messages in it that may hold what r looks for,
// unpacking the Any values whose payload types are linked into the
// program, in a fixed order: fields by number, list items by index, map
// entries by key.
func walk(m protoreflect.Message, r *reach, v visitor) {
	w := walker{v: v, r: r}
	w.message(m, 0)
}

type walker struct {
	v  visitor
	r  *reach
	at path
}

func (w *walker) message(m protoreflect.Message, anyDepth int) {
	w.v.message(m, &w.at)
	if m.Descriptor().FullName() == anyFullName {
		w.any(m, anyDepth)
		return
	}
	for _, fd := range w.r.fields(m.Descriptor()) {
		if !m.Has(fd) {
			continue
		}
		w.at.push(step{field: fd.Name()})
		w.value(fd, m.Get(fd), anyDepth)
		w.at.pop()
	}
}

func (w *walker) value(fd protoreflect.FieldDescriptor, v protoreflect.Value, anyDepth int) {
	switch {
	case fd.IsMap():
		for _, k := range sortedKeys(v.Map()) {
			w.at.push(step{key: k, kind: keyStep})
			w.message(v.Map().Get(k).Message(), anyDepth)
			w.at.pop()
		}
	case fd.IsList():
		l := v.List()
		for i := 0; i < l.Len(); i++ {
			w.at.push(step{index: i, kind: indexStep})
			w.message(l.Get(i).Message(), anyDepth)
			w.at.pop()
		}
	default:
		w.message(v.Message(), anyDepth)
	}
}

// any unpacks an Any whose type is linked and walks its payload. One of
// an unknown type is left alone: Envoy may know extensions this program
// does not.
func (w *walker) any(m protoreflect.Message, anyDepth int) {
	fields := m.Descriptor().Fields()
	typeURL := m.Get(fields.ByNumber(1)).String()
	mt, err := protoregistry.GlobalTypes.FindMessageByURL(typeURL)
	if err != nil {
		return
	}
	if anyDepth >= maxAnyDepth {
		w.v.unpacked(typeURL, nil, errTooDeep, &w.at)
		return
	}
	payload := mt.New().Interface()
	if err := proto.Unmarshal(m.Get(fields.ByNumber(2)).Bytes(), payload); err != nil {
		w.v.unpacked(typeURL, nil, err, &w.at)
		return
	}
	w.v.unpacked(typeURL, payload, nil, &w.at)
	w.message(payload.ProtoReflect(), anyDepth+1)
}

// sortedKeys returns m's keys in order, so that a walk, and the errors
// it reports, are the same every time.
func sortedKeys(m protoreflect.Map) []protoreflect.MapKey {
	keys := make([]protoreflect.MapKey, 0, m.Len())
	m.Range(func(k protoreflect.MapKey, _ protoreflect.Value) bool {
		keys = append(keys, k)
		return true
	})
	slices.SortFunc(keys, func(a, b protoreflect.MapKey) int {
		switch x := a.Interface().(type) {
		case string:
			return strings.Compare(x, b.Interface().(string))
		case bool:
			return cmp.Compare(a.String(), b.String())
		case int32, int64:
			return cmp.Compare(a.Int(), b.Int())
		default:
			return cmp.Compare(a.Uint(), b.Uint())
		}
	})
	return keys
}
