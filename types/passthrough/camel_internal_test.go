package passthrough

import (
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// TestGoCamelCase checks goCamelCase against the Go names protoc-gen-go
// gave the fields and oneofs of every message linked into this test,
// which protoc-gen-validate's errors use.
func TestGoCamelCase(t *testing.T) {
	checked := 0
	protoregistry.GlobalTypes.RangeMessages(func(mt protoreflect.MessageType) bool {
		st := reflect.TypeOf(mt.Zero().Interface())
		if st.Kind() != reflect.Pointer || st.Elem().Kind() != reflect.Struct {
			return true
		}
		st = st.Elem()
		for i := 0; i < st.NumField(); i++ {
			f := st.Field(i)
			protoName := ""
			if tag, ok := f.Tag.Lookup("protobuf"); ok {
				for _, part := range strings.Split(tag, ",") {
					if n, ok := strings.CutPrefix(part, "name="); ok {
						protoName = n
					}
				}
			} else if oneof, ok := f.Tag.Lookup("protobuf_oneof"); ok {
				protoName = oneof
			}
			// protoc-gen-go appends "_" to a name that collides with a
			// method of the message (Reset, String, ...).
			if protoName == "" || strings.HasSuffix(f.Name, "_") {
				continue
			}
			checked++
			if got := goCamelCase(protoName); got != f.Name {
				t.Errorf("%s: goCamelCase(%q) = %q, want %q", mt.Descriptor().FullName(), protoName, got, f.Name)
			}
		}
		return true
	})
	if checked < 1000 {
		t.Fatalf("checked %d field names, want the thousands of the linked Envoy messages", checked)
	}
	t.Logf("checked %d field names", checked)
}
