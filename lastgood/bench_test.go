package lastgood

import (
	"math/rand/v2"
	"os"
	"testing"
	"time"

	clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	"google.golang.org/protobuf/proto"

	"github.com/xdsengine/xdsengine/engine/storage"
)

// The benchmarks' store: 10,000 Clusters, changed 1,000 at a time.
const (
	benchStore  = 10000
	benchChange = 1000
)

var clusterShapes = []struct {
	name string
	raw  func(i, version int) []byte
}{
	{"small", smallCluster}, // xdstest.Cluster, as the engine's benchmarks send
	{"mesh", meshCluster},   // with the fields a mesh sets, ~300 bytes
}

// benchSets returns change sets of benchChange Clusters each, spread at
// random over the store, at versions 1, 2, ...
func benchSets(n int, raw func(i, version int) []byte) [][]storage.Change {
	rng := rand.New(rand.NewPCG(1, 2))
	sets := make([][]storage.Change, n)
	for v := range sets {
		set := make([]storage.Change, 0, benchChange)
		for _, i := range rng.Perm(benchStore)[:benchChange] {
			set = append(set, clusterPut(i, v+1, raw))
		}
		sets[v] = set
	}
	return sets
}

func filledStore(b *testing.B, raw func(i, version int) []byte) (*Store, string) {
	path := storePath(b)
	s := mustOpen(b, path, Options{})
	all := make([]storage.Change, benchStore)
	for i := range all {
		all[i] = clusterPut(i, 0, raw)
	}
	mustApply(b, s, testDigest, all...)
	return s, path
}

// unmarshalBaseline is the least time proto.Unmarshal takes for the
// Clusters of set, over a few rounds: what a client does at the least
// for the response that brought them.
func unmarshalBaseline(set []storage.Change) time.Duration {
	best := time.Duration(1 << 62)
	for range 7 {
		start := time.Now()
		for _, c := range set {
			if err := proto.Unmarshal(c.Raw, new(clusterpb.Cluster)); err != nil {
				panic(err)
			}
		}
		best = min(best, time.Since(start))
	}
	return best
}

// BenchmarkApply writes change sets of 1,000 changed Clusters into a
// store of 10,000. x-unmarshal is the CPU time of one Apply (the
// process's, the kernel's work for write and fsync included) over the
// time proto.Unmarshal takes for the same 1,000 Clusters; rewrites/op is
// the share of change sets that rewrote the file.
func BenchmarkApply(b *testing.B) {
	for _, shape := range clusterShapes {
		b.Run(shape.name, func(b *testing.B) {
			s, _ := filledStore(b, shape.raw)
			defer s.Close()
			sets := benchSets(64, shape.raw)
			baseline := unmarshalBaseline(sets[0])
			rewrites := 0
			cpu0, cpuOK := processCPU()
			b.ResetTimer()
			i := 0
			for b.Loop() {
				before := s.size
				if err := s.Apply(testDigest, sets[i%len(sets)]); err != nil {
					b.Fatal(err)
				}
				if s.size < before+int64(benchChange) {
					rewrites++
				}
				i++
			}
			b.StopTimer()
			cpu1, _ := processCPU()
			if cpuOK {
				perOp := float64(cpu1-cpu0) / float64(i)
				b.ReportMetric(perOp, "cpu-ns/op")
				b.ReportMetric(perOp/float64(baseline), "x-unmarshal")
			}
			b.ReportMetric(float64(rewrites)/float64(i), "rewrites/op")
		})
	}
}

// BenchmarkApplyAll is the engine's scenario (a): a store of 1,000
// Clusters, every one changed in each change set, so that each rewrites
// the file.
func BenchmarkApplyAll(b *testing.B) {
	for _, shape := range clusterShapes {
		b.Run(shape.name, func(b *testing.B) {
			s := mustOpen(b, storePath(b), Options{})
			sets := make([][]storage.Change, 8)
			for v := range sets {
				for i := range benchChange {
					sets[v] = append(sets[v], clusterPut(i, v, shape.raw))
				}
			}
			mustApply(b, s, testDigest, sets[0]...)
			baseline := unmarshalBaseline(sets[0])
			cpu0, cpuOK := processCPU()
			i := 0
			for b.Loop() {
				if err := s.Apply(testDigest, sets[i%len(sets)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
			cpu1, _ := processCPU()
			if cpuOK {
				perOp := float64(cpu1-cpu0) / float64(i)
				b.ReportMetric(perOp, "cpu-ns/op")
				b.ReportMetric(perOp/float64(baseline), "x-unmarshal")
			}
		})
	}
}

// BenchmarkLoad reads a store of 10,000 Clusters, that has been changed
// a few times since it was last rewritten.
func BenchmarkLoad(b *testing.B) {
	for _, shape := range clusterShapes {
		b.Run(shape.name, func(b *testing.B) {
			s, _ := filledStore(b, shape.raw)
			defer s.Close()
			for _, set := range benchSets(3, shape.raw) {
				mustApply(b, s, testDigest, set...)
			}
			for b.Loop() {
				l, err := s.Load(testDigest)
				if err != nil || len(l.Resources) != benchStore {
					b.Fatal(len(l.Resources), err)
				}
			}
		})
	}
}

// BenchmarkOpenLoad is a start: Open (lock, read, check), Load, Close.
func BenchmarkOpenLoad(b *testing.B) {
	for _, shape := range clusterShapes {
		b.Run(shape.name, func(b *testing.B) {
			s, path := filledStore(b, shape.raw)
			for _, set := range benchSets(3, shape.raw) {
				mustApply(b, s, testDigest, set...)
			}
			s.Close()
			for b.Loop() {
				s, err := Open(path, Options{})
				if err != nil {
					b.Fatal(err)
				}
				l, err := s.Load(testDigest)
				if err != nil || len(l.Resources) != benchStore {
					b.Fatal(len(l.Resources), err)
				}
				s.Close()
			}
		})
	}
}

// BenchmarkDiskSize fills a store with 10,000 Clusters and changes
// 1,000 of them at a time, 64 times, and reports the file's size over
// the bytes kept: the resources' bytes alone (x-raw), and those with
// their keys, versions, servers and times (x-kept). max- is the largest
// the file was after a change set, mean- its mean, compacted- its size if
// rewritten at the end.
func BenchmarkDiskSize(b *testing.B) {
	for _, shape := range clusterShapes {
		b.Run(shape.name, func(b *testing.B) {
			var maxFile, sumFile, compacted, raw, kept float64
			for b.Loop() {
				s, path := filledStore(b, shape.raw)
				sets := benchSets(64, shape.raw)
				maxFile, sumFile = 0, 0
				for _, set := range sets {
					mustApply(b, s, testDigest, set...)
					fi, err := os.Stat(path)
					if err != nil {
						b.Fatal(err)
					}
					maxFile = max(maxFile, float64(fi.Size()))
					sumFile += float64(fi.Size())
				}
				compacted = float64(s.compacted())
				l := mustLoad(b, s, testDigest)
				raw, kept = 0, 0
				for _, r := range l.Resources {
					raw += float64(len(r.Raw))
					kept += float64(len(r.Raw) + len(r.Authority) + len(r.Server) + len(r.TypeURL) + len(r.Name) + len(r.Version) + 8)
				}
				s.Close()
			}
			mean := sumFile / 64
			b.ReportMetric(raw/benchStore, "raw-B/resource")
			b.ReportMetric(maxFile/raw, "max-x-raw")
			b.ReportMetric(mean/raw, "mean-x-raw")
			b.ReportMetric(compacted/raw, "compacted-x-raw")
			b.ReportMetric(maxFile/kept, "max-x-kept")
			b.ReportMetric(compacted/kept, "compacted-x-kept")
		})
	}
}
