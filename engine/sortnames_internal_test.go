package engine

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// shuffledNames is n names, prefix and a number, in a random order.
func shuffledNames(n int, prefix string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = prefix + strconv.Itoa(i)
	}
	r := rand.New(rand.NewPCG(uint64(n), 2))
	r.Shuffle(n, func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// repeated is names made from parts, cycled until there are n.
func repeated(n int, parts ...string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = parts[i%len(parts)]
	}
	return out
}

func TestSortNames(t *testing.T) {
	const xdstpPrefix = "xdstp://authority.example/envoy.config.cluster.v3.Cluster/"
	for _, tc := range []struct {
		name  string
		names []string
	}{
		{"none", nil},
		{"one", []string{"a"}},
		{"fewer than the packed sort takes", shuffledNames(sortNamesMin-1, "cluster-")},
		{"as many as the packed sort takes", shuffledNames(sortNamesMin, "cluster-")},
		{"a power of two", shuffledNames(128, "cluster-")},
		{"one past a power of two", shuffledNames(129, "cluster-")},
		{"1,000 old-style names", shuffledNames(1000, "cluster-")},
		{"1,000 xdstp names", shuffledNames(1000, xdstpPrefix+"cluster-")},
		{"100,000 names: fewer key bits", shuffledNames(100_000, "c")},
		{"no shared prefix", shuffledNames(500, "")},
		{"every name the same", repeated(300, "same")},
		{"repeats, as touched keys have", append(shuffledNames(200, "n"), shuffledNames(200, "n")...)},
		{"names that tie past the key's bytes", shuffledNames(300, "p/0123456789abcdef-")},
		{"names that end within the key", repeated(200, "ab", "a", "abc", "", "a\x00", "a\x00\x00", "ab\x00c", "b")},
		{"bytes above 0x7f", repeated(100, "é", "e", "ü", "\u00ff\u00ff", "z", "日本", "日")},
		{"keys that differ only in the bits the index takes", repeated(150, "k\x00\x00\x00\x00\x00\x00\x01", "k\x00\x00\x00\x00\x00\x00\x02", "k\x00\x00\x00\x00\x00\x00\x00")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := slices.Clone(tc.names)
			slices.Sort(want)
			got := slices.Clone(tc.names)
			sortNames(got)
			if !slices.Equal(got, want) {
				t.Fatalf("sortNames differs from slices.Sort (first difference at %d)", firstDifference(got, want))
			}
		})
	}
}

func firstDifference(a, b []string) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return len(a)
}

// FuzzSortNames: sortNames orders any names as slices.Sort does. The
// input's lines are the names, repeated with a few prefixes so that the
// packed sort runs.
func FuzzSortNames(f *testing.F) {
	f.Add("cluster-1\ncluster-10\ncluster-2")
	f.Add("a\na\x00\n\nab\nb")
	f.Add("xdstp://a/t/0123456789\nxdstp://a/t/01234567\nxdstp://a/t/012345678")
	f.Fuzz(func(t *testing.T, input string) {
		lines := strings.Split(input, "\n")
		var names []string
		for len(names) < sortNamesMin {
			for i, line := range lines {
				names = append(names, line, strconv.Itoa(i%3)+line)
			}
		}
		want := slices.Clone(names)
		slices.Sort(want)
		sortNames(names)
		if !slices.Equal(names, want) {
			t.Fatalf("sortNames differs from slices.Sort (first difference at %d)", firstDifference(names, want))
		}
	})
}

// BenchmarkSortNames compares sortNames with slices.Sort on 1,000 names,
// alone and with the collector marking throughout (gc), as it often is
// while a cold start builds its first request.
func BenchmarkSortNames(b *testing.B) {
	for _, shape := range []struct{ name, prefix string }{
		{"old-style", "cluster-"},
		{"xdstp", "xdstp://authority.example/envoy.config.cluster.v3.Cluster/cluster-"},
	} {
		in := shuffledNames(1000, shape.prefix)
		for _, collecting := range []bool{false, true} {
			name := shape.name
			if collecting {
				name += "/gc"
			}
			for _, sorter := range []struct {
				name string
				sort func([]string)
			}{{"slices.Sort", slices.Sort[[]string]}, {"sortNames", sortNames}} {
				b.Run(name+"/"+sorter.name, func(b *testing.B) {
					stop := make(chan struct{})
					done := make(chan struct{})
					go func() {
						defer close(done)
						for collecting {
							select {
							case <-stop:
								return
							default:
								runtime.GC()
							}
						}
					}()
					buf := make([]string, len(in))
					b.ReportAllocs()
					b.ResetTimer()
					for range b.N {
						copy(buf, in)
						sorter.sort(buf)
					}
					b.StopTimer()
					close(stop)
					<-done
				})
			}
		}
	}
}
