package protoscan

import "unicode/utf8"

// ValidUTF8 reports whether b may be a string field's value:
// proto.Unmarshal refuses a proto3 string that is not valid UTF-8.
func ValidUTF8(b []byte) bool { return utf8.Valid(b) }

// FieldSet records the field numbers of a message met so far, so that a
// walker finds a field sent twice: proto.Unmarshal merges a message field
// sent twice and keeps the last of a scalar's values, and a walker that
// reads the usual shape leaves both to it. It holds numbers 1 to 63.
type FieldSet uint64

// Add adds num and reports whether it was new. A number above 63 is
// never new: a walker that meets one leaves the message to
// proto.Unmarshal.
func (s *FieldSet) Add(num Number) bool {
	if num < 1 || num > 63 || *s&(1<<num) != 0 {
		return false
	}
	*s |= 1 << num
	return true
}

// Has reports whether num was added.
func (s FieldSet) Has(num Number) bool { return num >= 1 && num <= 63 && s&(1<<num) != 0 }
