package validation

import (
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/go-multierror"
)

// MaxErrors bounds how many errors one resource reports. A resource with
// thousands of broken endpoints would otherwise produce a NACK whose
// error_detail is larger than the resource itself.
const MaxErrors = 64

// FieldError is one broken rule of one field.
type FieldError struct {
	Field string // e.g. "virtual_hosts[0].routes[2].route.weighted_clusters"
	Rule  string // e.g. "total weight is 0"
}

func (e *FieldError) Error() string {
	if e.Field == "" {
		return e.Rule
	}
	return e.Field + ": " + e.Rule
}

// Errors accumulates field errors. The zero value is ready to use.
type Errors struct {
	list    *multierror.Error
	dropped int
}

// Add records that field breaks rule.
func (e *Errors) Add(field, rule string) { e.AddError(&FieldError{Field: field, Rule: rule}) }

// Addf is Add with a formatted rule.
func (e *Errors) Addf(field, format string, args ...any) {
	if e.full() {
		e.dropped++
		return
	}
	e.Add(field, fmt.Sprintf(format, args...))
}

// AddError records err as it is.
func (e *Errors) AddError(err error) {
	if e.full() {
		e.dropped++
		return
	}
	e.list = multierror.Append(e.list, err)
	e.list.ErrorFormat = oneLine
}

// AddWithin records every error collected in err (an Err result of
// another Errors, or a single error), each with its field path put under
// prefix: how a Listener reports the errors of its inline route
// configuration.
func (e *Errors) AddWithin(prefix string, err error) {
	var merr *multierror.Error
	if errors.As(err, &merr) {
		for _, one := range merr.WrappedErrors() {
			e.AddError(Within(prefix, one))
		}
		return
	}
	e.AddError(Within(prefix, err))
}

func (e *Errors) full() bool { return e.list != nil && len(e.list.Errors) >= MaxErrors }

// Len reports how many errors were recorded, including dropped ones.
func (e *Errors) Len() int {
	if e.list == nil {
		return e.dropped
	}
	return len(e.list.Errors) + e.dropped
}

// Err returns nil when nothing was recorded, otherwise a *multierror.Error
// holding every recorded error, formatted on one line ("a: rule; b: rule")
// to read well inside a NACK's error_detail.
func (e *Errors) Err() error {
	if e.list == nil {
		return nil
	}
	if e.dropped > 0 {
		out := multierror.Append(nil, e.list.Errors...)
		out = multierror.Append(out, fmt.Errorf("and %d more errors", e.dropped))
		out.ErrorFormat = oneLine
		return out
	}
	return e.list
}

func oneLine(errs []error) string {
	parts := make([]string, len(errs))
	for i, err := range errs {
		parts[i] = err.Error()
	}
	return strings.Join(parts, "; ")
}

// Within returns err with its field path under prefix.
func Within(prefix string, err error) *FieldError {
	var fe *FieldError
	if !errors.As(err, &fe) {
		return &FieldError{Field: prefix, Rule: err.Error()}
	}
	field := prefix
	switch {
	case fe.Field == "":
	case fe.Field[0] == '[':
		field += fe.Field
	default:
		field += "." + fe.Field
	}
	return &FieldError{Field: field, Rule: fe.Rule}
}

// TypeName returns the fully qualified message name of an Any type URL:
// the part after the last '/'. Any treats everything before it as an
// opaque host, so comparisons must ignore it.
func TypeName(typeURL string) string {
	return typeURL[strings.LastIndexByte(typeURL, '/')+1:]
}
