package passthrough

import (
	"errors"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/xdsengine/xdsengine/registry"
)

// validator checks that each Any payload in a resource whose type is
// linked unmarshals, no deeper than maxAnyDepth, and with rules the
// constraints the proto declares too, through the ValidateAll methods
// protoc-gen-validate generated for the message and for each of those
// payloads. It reports every violation at once, each as "field path:
// rule".
type validator struct {
	reach *reach
	rules bool
}

func (v *validator) Validate(r registry.Resource, _ registry.DecodeOptions) error {
	res, ok := r.(*Resource)
	if !ok || res == nil {
		return errors.New("not a pass-through resource")
	}
	var errs registry.FieldErrors
	if v.rules {
		checkMessage(&errs, "", res.msg)
	}
	walk(res.msg.ProtoReflect(), v.reach, &checker{errs: &errs, rules: v.rules})
	return errs.Err()
}

// checker checks the Any payloads a walk unpacks.
type checker struct {
	errs  *registry.FieldErrors
	rules bool
}

func (c *checker) message(protoreflect.Message, *path) {}

func (c *checker) unpacked(typeURL string, m proto.Message, err error, at *path) {
	if errors.Is(err, errTooDeep) {
		c.errs.AddError(&registry.FieldError{Field: at.String(), Err: err})
		return
	}
	if err != nil {
		c.errs.Addf(at.String(), "cannot unmarshal %s: %v", registry.TypeName(typeURL), err)
		return
	}
	if c.rules {
		checkMessage(c.errs, at.String(), m)
	}
}

// checkMessage validates m with its generated ValidateAll method (or
// Validate, which stops at the first violation), if it has one, and adds
// each violation, its field path under prefix.
func checkMessage(errs *registry.FieldErrors, prefix string, m proto.Message) {
	var err error
	switch v := m.(type) {
	case interface{ ValidateAll() error }:
		err = v.ValidateAll()
	case interface{ Validate() error }:
		err = v.Validate()
	}
	if err != nil {
		addViolations(errs, prefix, m.ProtoReflect().Descriptor(), err)
	}
}

// violation is what every protoc-gen-validate error type implements.
type violation interface {
	Field() string
	Reason() string
	Cause() error
	Key() bool
}

// pgvNested is the reason protoc-gen-validate gives for a field whose
// message broke a rule; the cause says which.
const pgvNested = "embedded message failed validation"

// addViolations adds the violations in err, reported for a message of md
// at prefix. protoc-gen-validate names fields as Go does (TransportSocket,
// Clusters[2]); they are renamed as the proto does (transport_socket,
// clusters[2]), following nested violations down the message's fields.
func addViolations(errs *registry.FieldErrors, prefix string, md protoreflect.MessageDescriptor, err error) {
	if multi, ok := err.(interface{ AllErrors() []error }); ok {
		for _, e := range multi.AllErrors() {
			addViolations(errs, prefix, md, e)
		}
		return
	}
	var v violation
	if !errors.As(err, &v) {
		errs.AddError(registry.FieldWithin(prefix, err))
		return
	}
	field, next := protoField(md, v.Field())
	if prefix != "" {
		field = prefix + "." + field
	}
	cause := v.Cause()
	switch {
	case v.Reason() == pgvNested && cause != nil && next != nil:
		addViolations(errs, field, next, cause)
	case v.Key():
		errs.Add(field, "key "+rule(v.Reason(), cause))
	default:
		errs.Add(field, rule(v.Reason(), cause))
	}
}

func rule(reason string, cause error) string {
	if cause == nil {
		return reason
	}
	return reason + ": " + cause.Error()
}

// protoField renames goField, a field as protoc-gen-validate names it in
// a message of md, possibly with an index or map key ("Clusters[2]"), as
// the proto names it, and returns the descriptor of the field's messages
// (nil for a scalar or a field md does not have). A oneof that must be
// set is named by its own name.
func protoField(md protoreflect.MessageDescriptor, goField string) (string, protoreflect.MessageDescriptor) {
	goName, index := goField, ""
	if i := strings.IndexByte(goField, '['); i >= 0 {
		goName, index = goField[:i], goField[i:]
	}
	fields := md.Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if goCamelCase(string(fd.Name())) != goName {
			continue
		}
		next := fd.Message()
		if fd.IsMap() {
			next = fd.MapValue().Message()
		}
		return string(fd.Name()) + index, next
	}
	oneofs := md.Oneofs()
	for i := 0; i < oneofs.Len(); i++ {
		if o := oneofs.Get(i); goCamelCase(string(o.Name())) == goName {
			return string(o.Name()) + index, nil
		}
	}
	return goField, nil
}

// goCamelCase is the Go name protoc-gen-go (and so protoc-gen-validate)
// gives a field or oneof called name: each '_' followed by a lowercase
// letter is dropped and the letter capitalized, as is the first letter;
// digits are kept as they are, and the letter after one is capitalized.
func goCamelCase(name string) string {
	var b strings.Builder
	b.Grow(len(name))
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '_' && i == 0:
			b.WriteByte('X')
		case c == '_' && i+1 < len(name) && isLower(name[i+1]):
		case isDigit(c):
			b.WriteByte(c)
		default:
			if isLower(c) {
				c -= 'a' - 'A'
			}
			b.WriteByte(c)
			for ; i+1 < len(name) && isLower(name[i+1]); i++ {
				b.WriteByte(name[i+1])
			}
		}
	}
	return b.String()
}

func isLower(c byte) bool { return 'a' <= c && c <= 'z' }
func isDigit(c byte) bool { return '0' <= c && c <= '9' }
