package passthrough

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

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
var errTooDeep = fmt.Errorf("Any values nested more than %d deep", maxAnyDepth)

const anyFullName protoreflect.FullName = "google.protobuf.Any"

// visitor is told of what a walk finds.
type visitor interface {
	// message is called for every message of the tree, the root and
	// unpacked Any payloads included.
	message(m protoreflect.Message, at *path)
	// unpacked is called for an Any whose payload's type is linked, with
	// the payload or, m nil, the reason it was not read: an unmarshal
	// error, or errTooDeep.
	unpacked(typeURL string, m proto.Message, err error, at *path)
}

// path is where a walk is: field names and indexes as a NACK spells
// them ("filter_chains[0].filters[1].typed_config"), rendered only when
// asked for.
type path struct{ parts []string }

func (p *path) field(name protoreflect.Name) {
	if len(p.parts) > 0 {
		p.parts = append(p.parts, ".")
	}
	p.parts = append(p.parts, string(name))
}

func (p *path) index(key string) { p.parts = append(p.parts, "[", key, "]") }

func (p *path) mark() int { return len(p.parts) }

func (p *path) reset(mark int) { p.parts = p.parts[:mark] }

func (p *path) String() string { return strings.Join(p.parts, "") }

// walk visits m and every message in it, unpacking the Any values whose
// payload types are linked into the program, in a fixed order: fields by
// number, map entries by key.
func walk(m protoreflect.Message, v visitor) {
	w := walker{v: v}
	w.message(m, 0)
}

type walker struct {
	v  visitor
	at path
}

func (w *walker) message(m protoreflect.Message, anyDepth int) {
	w.v.message(m, &w.at)
	if m.Descriptor().FullName() == anyFullName {
		w.any(m, anyDepth)
		return
	}
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if fd.Message() == nil || !m.Has(fd) {
			continue
		}
		mark := w.at.mark()
		w.at.field(fd.Name())
		w.value(fd, m.Get(fd), anyDepth)
		w.at.reset(mark)
	}
}

func (w *walker) value(fd protoreflect.FieldDescriptor, v protoreflect.Value, anyDepth int) {
	switch {
	case fd.IsMap():
		if fd.MapValue().Message() == nil {
			return
		}
		for _, k := range sortedKeys(v.Map()) {
			mark := w.at.mark()
			w.at.index(k.String())
			w.message(v.Map().Get(k).Message(), anyDepth)
			w.at.reset(mark)
		}
	case fd.IsList():
		l := v.List()
		for i := 0; i < l.Len(); i++ {
			mark := w.at.mark()
			w.at.index(strconv.Itoa(i))
			w.message(l.Get(i).Message(), anyDepth)
			w.at.reset(mark)
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
