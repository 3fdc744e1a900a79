package transport

import "testing"

// TestSizeClass: a class's size holds its messages with at most a
// quarter more, and is a size of its own class, so that recycled memory
// goes back where messages of its size look for it.
func TestSizeClass(t *testing.T) {
	for n := minPooledMessage; n < 1<<22; n += 1 + n/97 {
		class, size := sizeClass(n)
		if size < n || 4*size > 5*n+4*(n>>2) {
			t.Fatalf("sizeClass(%d) = %d, %d: the size does not hold n with at most a quarter more", n, class, size)
		}
		if c, s := sizeClass(size); c != class || s != size {
			t.Fatalf("sizeClass(%d) = %d, %d, but sizeClass(%d) = %d, %d", n, class, size, size, c, s)
		}
		if m := newMessage(n); len(m) != n || cap(m) != size {
			t.Fatalf("newMessage(%d): len %d, cap %d; want %d, %d", n, len(m), cap(m), n, size)
		}
	}
}
