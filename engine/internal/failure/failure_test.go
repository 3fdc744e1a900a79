package failure

import (
	"errors"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/xdsengine/xdsengine/engine/internal/keep"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// errT stands for the engine's error type.
type errT struct{ msg string }

// TestRecord: a nil record answers every question with nothing; each
// With makes one when needed; clearing the ambient error drops a record
// with nothing else to say, and keeps one that has.
func TestRecord(t *testing.T) {
	nack := &errT{"NACK"}
	unreachable := errors.New("unreachable")
	stored := &keep.Stored{Version: "v0"}
	at := time.Unix(100, 0)
	for _, tc := range []struct {
		name         string
		steps        func(r *Record[*errT]) *Record[*errT]
		wantNil      bool
		wantErr      *errT
		wantAmbient  error
		wantStored   *keep.Stored
		wantVersion  string
		wantFailedAt time.Time
	}{
		{name: "nothing", steps: func(r *Record[*errT]) *Record[*errT] { return r }, wantNil: true},
		{name: "an error", steps: func(r *Record[*errT]) *Record[*errT] { return r.WithError(nack, "v2", at) },
			wantErr: nack, wantVersion: "v2", wantFailedAt: at},
		{name: "an ambient error", steps: func(r *Record[*errT]) *Record[*errT] { return r.WithAmbient(unreachable) },
			wantAmbient: unreachable},
		{name: "an ambient error cleared", steps: func(r *Record[*errT]) *Record[*errT] {
			return r.WithAmbient(unreachable).WithAmbient(nil)
		}, wantNil: true},
		{name: "cleared with nothing to clear", steps: func(r *Record[*errT]) *Record[*errT] { return r.WithAmbient(nil) },
			wantNil: true},
		{name: "an error outlives its ambient error", steps: func(r *Record[*errT]) *Record[*errT] {
			return r.WithError(nack, "v2", at).WithAmbient(unreachable).WithAmbient(nil)
		}, wantErr: nack, wantVersion: "v2", wantFailedAt: at},
		{name: "served from the store, then unreachable cleared", steps: func(r *Record[*errT]) *Record[*errT] {
			return r.WithStored(stored, at).WithAmbient(unreachable).WithAmbient(nil)
		}, wantStored: stored},
	} {
		r := tc.steps(nil)
		if (r == nil) != tc.wantNil {
			t.Errorf("%s: record %+v, want nil: %v", tc.name, r, tc.wantNil)
			continue
		}
		if r.LastError() != tc.wantErr || r.AmbientError() != tc.wantAmbient || r.FromStore() != tc.wantStored {
			t.Errorf("%s: error %v, ambient %v, stored %v; want %v, %v, %v", tc.name, r.LastError(), r.AmbientError(),
				r.FromStore(), tc.wantErr, tc.wantAmbient, tc.wantStored)
		}
		if r != nil && (r.FailedVersion != tc.wantVersion || !r.FailedAt.Equal(tc.wantFailedAt)) {
			t.Errorf("%s: failed version %q at %v, want %q at %v", tc.name, r.FailedVersion, r.FailedAt, tc.wantVersion, tc.wantFailedAt)
		}
	}
}
