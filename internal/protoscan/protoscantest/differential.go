package protoscantest

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// ErrDeclined is what a fast path under test returns for bytes it leaves
// to its caller's slow path: nothing is compared.
var ErrDeclined = errors.New("protoscantest: the fast path declined the bytes")

// Differential is a fast path and the slow path it must agree with.
type Differential[T any] struct {
	// Fast runs the fast path on b as its caller does. ErrDeclined says
	// that it left b to the slow path; another error is a refusal.
	Fast func(b []byte) (T, error)
	// Reference decodes b the slow way: proto.Unmarshal, then what the
	// fast path's caller does with the message (the fast path's own
	// fallback), so that the two results compare as values.
	Reference func(b []byte) (T, error)
	// Equal compares an accepted result with the reference's; nil means
	// reflect.DeepEqual. For proto messages, use proto.Equal.
	Equal func(fast, ref T) bool
	// SameError also asks a refusal to carry the reference's error text:
	// for a fast path that returns proto.Unmarshal's error as its own.
	SameError bool
	// Partial says that the fast path reads only part of a message and
	// judges none of the rest (registry.ResourceType.ReadName): where
	// the reference refuses b, the fast path's answer is not checked.
	Partial bool
}

// Check runs both paths on b and says how they disagree: a fast path may
// decline anything; what it accepts the reference must accept, with an
// equal result; what it refuses the reference must refuse.
func (d Differential[T]) Check(b []byte) error {
	_, err := d.check(b)
	return err
}

// check is Check, which also reports whether the fast path took b
// rather than declined it.
func (d Differential[T]) check(b []byte) (took bool, err error) {
	fast, ferr := d.Fast(b)
	if errors.Is(ferr, ErrDeclined) {
		return false, nil
	}
	ref, rerr := d.Reference(b)
	switch {
	case rerr != nil && d.Partial:
		return true, nil
	case ferr == nil && rerr != nil:
		return true, fmt.Errorf("the fast path accepted what the reference refuses (%v): %+v", rerr, fast)
	case ferr != nil && rerr == nil:
		return true, fmt.Errorf("the fast path refused (%v) what the reference accepts: %+v", ferr, ref)
	case ferr != nil:
		if d.SameError && ferr.Error() != rerr.Error() {
			return true, fmt.Errorf("the fast path refused with %q, the reference with %q", ferr, rerr)
		}
		return true, nil
	}
	equal := d.Equal
	if equal == nil {
		equal = func(a, b T) bool { return reflect.DeepEqual(a, b) }
	}
	if !equal(fast, ref) {
		return true, fmt.Errorf("the fast path gave %+v\nthe reference %+v", fast, ref)
	}
	return true, nil
}

// Test checks each seed, encoded messages of type md, and each of their
// mutations (Mutate), naming those where the paths disagree. It fails,
// too, if the fast path accepted none of them: the comparison would then
// have checked nothing.
func (d Differential[T]) Test(t *testing.T, md protoreflect.MessageDescriptor, seeds ...[]byte) {
	t.Helper()
	inputs, names, _ := corpus(md, seeds)
	took, failed := 0, 0
	for i, b := range inputs {
		ok, err := d.check(b)
		if ok {
			took++
		}
		if err == nil {
			continue
		}
		if failed++; failed <= maxReported {
			t.Errorf("%s (%x):\n%v", names[i], b, err)
		}
	}
	if failed > maxReported {
		t.Errorf("and %d more inputs where the paths disagree", failed-maxReported)
	}
	if took == 0 {
		t.Errorf("the fast path declined all %d inputs: nothing was compared", len(inputs))
	}
	t.Logf("%d seeds, %d inputs with their mutations, %d taken by the fast path", len(seeds), len(inputs), took)
}

// maxReported bounds the disagreements Test names.
const maxReported = 20

// Fuzz fuzzes Check from the seeds and a sample of their mutations, at
// most fuzzMutants evenly spread over them: Test runs every mutation,
// and each entry of a fuzz corpus costs the fuzzing coordinator tens of
// milliseconds before the first execution (9,000 mutations of the
// Cluster seeds took four minutes).
func (d Differential[T]) Fuzz(f *testing.F, md protoreflect.MessageDescriptor, seeds ...[]byte) {
	f.Helper()
	inputs, _, nseeds := corpus(md, seeds)
	mutants := inputs[nseeds:]
	step := max(1, len(mutants)/fuzzMutants)
	for _, b := range inputs[:nseeds] {
		f.Add(b)
	}
	for i := 0; i < len(mutants); i += step {
		f.Add(mutants[i])
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if err := d.Check(b); err != nil {
			t.Fatalf("%x:\n%v", b, err)
		}
	})
}

// fuzzMutants bounds the mutations Fuzz adds to a corpus.
const fuzzMutants = 200

// corpus is the seeds and their mutations, each once, with their names;
// the first nseeds are the seeds.
func corpus(md protoreflect.MessageDescriptor, seeds [][]byte) (inputs [][]byte, names []string, nseeds int) {
	seen := make(map[string]bool)
	add := func(name string, b []byte) {
		if !seen[string(b)] {
			seen[string(b)] = true
			inputs, names = append(inputs, b), append(names, name)
		}
	}
	for i, s := range seeds {
		add(fmt.Sprintf("seed %d", i), s)
	}
	nseeds = len(inputs)
	for i, s := range seeds {
		for _, m := range Mutate(md, s) {
			add(fmt.Sprintf("seed %d, %s", i, m.Name), m.Bytes)
		}
	}
	return inputs, names, nseeds
}
