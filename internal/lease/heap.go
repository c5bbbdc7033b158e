package lease

import "container/heap"

// leaseHeap orders leases by their next event.
type leaseHeap []*Lease

// Len, Less, Swap, Push and Pop implement heap.Interface; the scheduler uses
// the lower-case wrappers below.

// Len returns the number of leases in the heap.
func (h leaseHeap) Len() int { return len(h) }

// Less orders leases by their next event.
func (h leaseHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }

// Swap swaps two leases and keeps their indexes.
func (h leaseHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}

// Push appends a lease; use push.
func (h *leaseHeap) Push(x any) {
	l := x.(*Lease)
	l.index = len(*h)
	*h = append(*h, l)
}

// Pop removes the last lease; use pop.
func (h *leaseHeap) Pop() any {
	old := *h
	l := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	l.index = -1
	return l
}

func (h *leaseHeap) push(l *Lease)   { heap.Push(h, l) }
func (h *leaseHeap) pop() *Lease     { return heap.Pop(h).(*Lease) }
func (h *leaseHeap) fix(l *Lease)    { heap.Fix(h, l.index) }
func (h *leaseHeap) remove(l *Lease) { heap.Remove(h, l.index) }
