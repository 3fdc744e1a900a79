// Package validation holds what the built-in types share in validating
// resources beyond registry.FieldErrors, the one-line NACK format every
// type (a user's own too) uses.
package validation
