package transport

import (
	"math/bits"
	"sync"
)

// A received message is read into memory that one recycled before
// (Recycler), when one of its size class is in the pool: the engine hands
// back every response once handled, as nothing it keeps points into one,
// so that a server sending the same configuration again and again costs
// no new memory, nor the collector's work for it. The pools are the
// collector's to empty when they go unused, so recycled memory is held
// only while messages keep coming.
//
// The classes are a quarter of a power of two apart: a message takes at
// most a quarter more memory than its size. Messages under
// minPooledMessage are allocated as they come.
var messagePools [4 * 64]sync.Pool // of *[]byte

const minPooledMessage = 4 << 10

// sizeClass returns the class of messages of n bytes, n >= 4, and its
// size: the least of the form (4+q+1)·2^(e-2), q < 4, that holds n.
func sizeClass(n int) (class, size int) {
	e := bits.Len(uint(n-1)) - 1 // 2^e <= n-1 < 2^(e+1)
	q := (n - 1) >> (e - 2) & 3
	return 4*e + q, (5 + q) << (e - 2)
}

// newMessage returns n bytes to read a message into.
func newMessage(n int) []byte {
	if n < minPooledMessage {
		return make([]byte, n)
	}
	class, size := sizeClass(n)
	if p, _ := messagePools[class].Get().(*[]byte); p != nil {
		return (*p)[:n]
	}
	return make([]byte, n, size)
}

// recycleMessage gives msg's memory back to the pool of its class. Only
// what newMessage made goes there: its capacity is its class's size.
func recycleMessage(msg []byte) {
	n := cap(msg)
	if n < minPooledMessage {
		return
	}
	if class, size := sizeClass(n); size == n {
		msg = msg[:0]
		messagePools[class].Put(&msg)
	}
}
