// Package markorder keeps an authority's entries of one type in the order
// responses last marked them, latest first: after a State of the World
// response, those it did not name are at the back, so its deletions are
// found without a walk of the others. The list is intrusive: each entry
// holds its Node, so that keeping the order allocates nothing.
package markorder

// Node is an element's place in a List; the element holds it, and Value
// is the element.
type Node[T any] struct {
	prev, next *Node[T]
	Value      T
}

// Prev returns the node before n, towards the front; nil at the front.
func (n *Node[T]) Prev() *Node[T] { return n.prev }

// List is an order of nodes. The zero value is an empty list.
type List[T any] struct{ front, back *Node[T] }

// Back returns the last node, nil if the list is empty.
func (l *List[T]) Back() *Node[T] { return l.back }

// PushBack appends n, which is in no list.
func (l *List[T]) PushBack(n *Node[T]) {
	n.prev, n.next = l.back, nil
	if l.back != nil {
		l.back.next = n
	} else {
		l.front = n
	}
	l.back = n
}

// Remove takes n, which is in l, out of it.
func (l *List[T]) Remove(n *Node[T]) {
	if n.prev != nil {
		n.prev.next = n.next
	} else {
		l.front = n.next
	}
	if n.next != nil {
		n.next.prev = n.prev
	} else {
		l.back = n.prev
	}
	n.prev, n.next = nil, nil
}

// MoveToFront moves n, which is in l, to its front.
func (l *List[T]) MoveToFront(n *Node[T]) {
	if l.front == n {
		return
	}
	l.Remove(n)
	n.next = l.front
	l.front.prev = n
	l.front = n
}
