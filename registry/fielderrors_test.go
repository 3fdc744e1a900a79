package registry

import (
	"errors"
	"io/fs"
	"os"
	"strings"
	"testing"

	"github.com/hashicorp/go-multierror"
)

func TestFieldErrors(t *testing.T) {
	var e FieldErrors
	if e.Err() != nil || e.Len() != 0 {
		t.Fatal("zero value must hold no error")
	}
	e.Add("a.b", "must be set")
	e.Addf("c[1]", "%d out of range", 70000)
	err := e.Err()
	if got, want := err.Error(), "a.b: must be set; c[1]: 70000 out of range"; got != want {
		t.Fatalf("Err() = %q, want %q", got, want)
	}
	var merr *multierror.Error
	if !errors.As(err, &merr) || len(merr.WrappedErrors()) != 2 {
		t.Fatalf("Err() is not a *multierror.Error of 2: %#v", err)
	}
	var outer FieldErrors
	outer.AddWithin("route_config", err)
	outer.AddWithin("x", errors.New("plain"))
	if got, want := outer.Err().Error(), "route_config.a.b: must be set; route_config.c[1]: 70000 out of range; x: plain"; got != want {
		t.Fatalf("AddWithin: %q, want %q", got, want)
	}
}

func TestFieldErrorsCap(t *testing.T) {
	var e FieldErrors
	for i := 0; i < MaxFieldErrors+10; i++ {
		e.Add("f", "bad")
	}
	if e.Len() != MaxFieldErrors+10 || !strings.HasSuffix(e.Err().Error(), "; and 10 more errors") {
		t.Fatalf("Len %d, Err %q", e.Len(), e.Err())
	}
}

// TestFieldErrorCause: a field error found through another error (a file
// that cannot be read) reads as "field: that error" and keeps it for
// errors.Is, also once put under a prefix.
func TestFieldErrorCause(t *testing.T) {
	_, openErr := os.Open("/nonexistent/ca.pem")
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"cause only", &FieldError{Field: "ca_certificate_file", Err: openErr}, "ca_certificate_file: " + openErr.Error()},
		{"rule and cause", &FieldError{Field: "ca_certificate_file", Rule: "cannot be read", Err: openErr}, "ca_certificate_file: cannot be read"},
		{"within", FieldWithin("channel_creds[0].config", &FieldError{Field: "ca_certificate_file", Err: openErr}),
			"channel_creds[0].config.ca_certificate_file: " + openErr.Error()},
		{"plain error within", FieldWithin("config", openErr), "config: " + openErr.Error()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.err.Error() != tt.want {
				t.Errorf("Error() = %q, want %q", tt.err, tt.want)
			}
			if !errors.Is(tt.err, fs.ErrNotExist) {
				t.Errorf("errors.Is(%v, fs.ErrNotExist) = false", tt.err)
			}
		})
	}
}
