package lrs

import (
	"errors"
	"testing"
	"time"

	lrspb "github.com/envoyproxy/go-control-plane/envoy/service/load_stats/v3"
)

// failingStream is a transport stream whose sends fail, as on a stream
// that ended between two reports.
type failingStream struct{ sends int }

func (f *failingStream) Send([]byte) error     { f.sends++; return errors.New("stream ended") }
func (f *failingStream) Recv() ([]byte, error) { return nil, errors.New("stream ended") }

// TestUnsentReportIsKept: a report whose send fails goes back into its
// store, and the next report holds it with the interval since the last
// report sent, so nothing is lost or counted twice.
func TestUnsentReportIsKept(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	st := newStore("c", "s", t0)
	loc := st.Locality(Locality{Zone: "z"})
	for i := 0; i < 10; i++ {
		loc.CallStarted()
		loc.CallFinished(nil)
		loc.CallServerLoad("cpu", 1)
	}
	loc.CallStarted() // in progress
	st.CallDropped("throttle")
	st.CallDropped("")

	snap := st.take(t0.Add(time.Second))
	loc.CallFinished(errors.New("x")) // recorded between take and restore
	st.restore(snap)

	got := st.take(t0.Add(2 * time.Second))
	ls := got.localities[Locality{Zone: "z"}]
	if ls.issued != 11 || ls.succeeded != 10 || ls.errored != 1 || ls.inProgress != 0 {
		t.Fatalf("after restore: %+v, want 11 issued, 10 succeeded, 1 failed, 0 in progress", ls)
	}
	if l := ls.loads["cpu"]; l.count != 10 || l.sum != 10 {
		t.Fatalf("cpu load %+v, want 10 calls summing 10", l)
	}
	if got.dropsTotal != 2 || got.drops["throttle"] != 1 {
		t.Fatalf("drops %d %v, want 2 in all, 1 throttle", got.dropsTotal, got.drops)
	}
	if got.interval != 2*time.Second {
		t.Fatalf("interval %v, want 2s: since the last report sent", got.interval)
	}
	if again := st.take(t0.Add(3 * time.Second)); !again.empty() {
		t.Fatalf("a second take has %+v, want nothing", again)
	}
}

// TestReportFailureRestores: report puts the snapshots of a failed send
// back.
func TestReportFailureRestores(t *testing.T) {
	c := &Client{e: nil}
	s := &server{c: c, stores: map[storeKey]*storeRef{}, settings: &lrspb.LoadStatsResponse{SendAllClusters: true}}
	st := newStore("c", "", time.Unix(0, 0))
	s.stores[storeKey{"c", ""}] = &storeRef{store: st, refs: 1}
	st.CallStarted(Locality{})
	st.CallFinished(Locality{}, nil)
	fs := &failingStream{}
	if _, err := s.reportAt(fs, time.Unix(5, 0)); err == nil {
		t.Fatal("report succeeded on a failing stream")
	}
	if fs.sends != 1 {
		t.Fatalf("%d sends, want 1", fs.sends)
	}
	if ls := st.take(time.Unix(6, 0)).localities[Locality{}]; ls.issued != 1 || ls.succeeded != 1 {
		t.Fatalf("after the failed report: %+v, want the call still there", ls)
	}
}

// TestStoreRecordsByLocality: the store's methods that take a locality
// record what the same calls on its LocalityStats do, and a store names
// the cluster and EDS service it was made for.
func TestStoreRecordsByLocality(t *testing.T) {
	zone := Locality{Region: "r", Zone: "z", SubZone: "s"}
	tests := []struct {
		name   string
		record func(st *Store)
		want   localitySnapshot
	}{
		{
			name: "started",
			record: func(st *Store) {
				st.CallStarted(zone)
			},
			want: localitySnapshot{inProgress: 1, issued: 1},
		},
		{
			name: "finished, one failed",
			record: func(st *Store) {
				st.CallStarted(zone)
				st.CallStarted(zone)
				st.CallFinished(zone, nil)
				st.CallFinished(zone, errors.New("unavailable"))
			},
			want: localitySnapshot{issued: 2, succeeded: 1, errored: 1},
		},
		{
			name: "server loads summed per name",
			record: func(st *Store) {
				st.CallServerLoad(zone, "cpu", 0.25)
				st.CallServerLoad(zone, "cpu", 0.5)
				st.CallServerLoad(zone, "mem", 3)
			},
			want: localitySnapshot{loads: map[string]loadSum{"cpu": {count: 2, sum: 0.75}, "mem": {count: 1, sum: 3}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t0 := time.Unix(1_700_000_000, 0)
			st := newStore("cluster-a", "eds-a", t0)
			if st.Cluster() != "cluster-a" || st.Service() != "eds-a" {
				t.Fatalf("store names %q, %q; want cluster-a, eds-a", st.Cluster(), st.Service())
			}
			tt.record(st)
			snap := st.take(t0.Add(time.Second))
			if len(snap.localities) != 1 {
				t.Fatalf("%d localities reported, want 1: %+v", len(snap.localities), snap.localities)
			}
			got := snap.localities[zone]
			if got.inProgress != tt.want.inProgress || got.issued != tt.want.issued ||
				got.succeeded != tt.want.succeeded || got.errored != tt.want.errored {
				t.Errorf("counts %+v, want %+v", got, tt.want)
			}
			if len(got.loads) != len(tt.want.loads) {
				t.Fatalf("loads %v, want %v", got.loads, tt.want.loads)
			}
			for name, want := range tt.want.loads {
				if got.loads[name] != want {
					t.Errorf("load %q: %+v, want %+v", name, got.loads[name], want)
				}
			}
		})
	}
}
