// Package watchrec is a recording engine.ResourceWatcher for tests: every
// callback becomes an Event on a channel the test reads in order.
package watchrec
