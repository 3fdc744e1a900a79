package registry

import (
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/go-multierror"
)

// MaxFieldErrors bounds how many errors one resource reports. A resource with
// thousands of broken endpoints would otherwise produce a NACK whose
// error_detail is larger than the resource itself.
const MaxFieldErrors = 64

// FieldError is one broken rule of one field, as a NACK names it:
// "field: rule". Decoders and validators of any type use it, and so do the
// credential types of a bootstrap, so that every such error reads alike.
type FieldError struct {
	Field string // e.g. "virtual_hosts[0].routes[2].route.weighted_clusters"
	Rule  string // e.g. "total weight is 0"; when "", Err's text
	// Err is the error the problem was found through, if any (a file that
	// cannot be read), for errors.Is and errors.As.
	Err error
}

// Error returns "field: rule", or the rule alone when the field is "".
func (e *FieldError) Error() string {
	rule := e.Rule
	if rule == "" && e.Err != nil {
		rule = e.Err.Error()
	}
	if e.Field == "" {
		return rule
	}
	return e.Field + ": " + rule
}

// Unwrap returns Err.
func (e *FieldError) Unwrap() error { return e.Err }

// FieldErrors collects the field errors of one resource, so that a single
// NACK lists every problem, each naming its field path and the rule it
// breaks, on one line ("a.b: must be set; c[1]: 70000 out of range"). At
// most MaxFieldErrors are kept; the rest are counted. The zero value is
// ready to use.
type FieldErrors struct {
	list    *multierror.Error
	dropped int
}

// Add records that field breaks rule.
func (e *FieldErrors) Add(field, rule string) { e.AddError(&FieldError{Field: field, Rule: rule}) }

// Addf is Add with a formatted rule.
func (e *FieldErrors) Addf(field, format string, args ...any) {
	if e.full() {
		e.dropped++
		return
	}
	e.Add(field, fmt.Sprintf(format, args...))
}

// AddError records err as it is.
func (e *FieldErrors) AddError(err error) {
	if e.full() {
		e.dropped++
		return
	}
	e.list = multierror.Append(e.list, err)
	e.list.ErrorFormat = oneLine
}

// AddWithin records every error collected in err (an Err result of
// another FieldErrors, or a single error), each with its field path put under
// prefix: how a Listener reports the errors of its inline route
// configuration.
func (e *FieldErrors) AddWithin(prefix string, err error) {
	var merr *multierror.Error
	if errors.As(err, &merr) {
		for _, one := range merr.WrappedErrors() {
			e.AddError(FieldWithin(prefix, one))
		}
		return
	}
	e.AddError(FieldWithin(prefix, err))
}

func (e *FieldErrors) full() bool { return e.list != nil && len(e.list.Errors) >= MaxFieldErrors }

// Len reports how many errors were recorded, including dropped ones.
func (e *FieldErrors) Len() int {
	if e.list == nil {
		return e.dropped
	}
	return len(e.list.Errors) + e.dropped
}

// Err returns nil when nothing was recorded, otherwise a *multierror.Error
// holding every recorded error, formatted on one line ("a: rule; b: rule")
// to read well inside a NACK's error_detail.
func (e *FieldErrors) Err() error {
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

// FieldWithin returns err with its field path put under prefix: how a
// resource reports the errors of a message nested in it. An error that is
// not a *FieldError becomes the rule of prefix itself, and its Err.
func FieldWithin(prefix string, err error) *FieldError {
	var fe *FieldError
	if !errors.As(err, &fe) {
		return &FieldError{Field: prefix, Rule: err.Error(), Err: err}
	}
	field := prefix
	switch {
	case fe.Field == "":
	case fe.Field[0] == '[':
		field += fe.Field
	default:
		field += "." + fe.Field
	}
	return &FieldError{Field: field, Rule: fe.Rule, Err: fe.Err}
}
