// Package validation collects the field errors of one resource so that a
// single NACK lists every problem, each naming its field path and the rule
// it breaks. The built-in types share it so that every NACK reads alike.
package validation
