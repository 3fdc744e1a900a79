// Package watchrec is a recording engine.ResourceWatcher for tests:
// every callback becomes an [Event] on a channel the test reads in order,
// with helpers that fail the test when the next event is not of the kind
// it expects ([Recorder.NextChanged], [Recorder.NextAmbient]) or when one
// arrives that should not ([Recorder.ExpectNone]). A holding recorder
// ([NewHolding]) leaves done to the test, to test flow control.
package watchrec
