package sim

// deque is the waiting queue: FCFS at the back, preempted requests return
// at the front.
type deque struct {
	buf        []*request
	head, size int
}

func (d *deque) len() int { return d.size }

func (d *deque) at(i int) *request { return d.buf[(d.head+i)%len(d.buf)] }

func (d *deque) front() *request { return d.at(0) }

func (d *deque) grow() {
	if d.size < len(d.buf) {
		return
	}
	nb := make([]*request, max(16, 2*len(d.buf)))
	for i := 0; i < d.size; i++ {
		nb[i] = d.at(i)
	}
	d.buf, d.head = nb, 0
}

func (d *deque) pushBack(r *request) {
	d.grow()
	d.buf[(d.head+d.size)%len(d.buf)] = r
	d.size++
}

func (d *deque) pushFront(r *request) {
	d.grow()
	d.head = (d.head - 1 + len(d.buf)) % len(d.buf)
	d.buf[d.head] = r
	d.size++
}

func (d *deque) popFront() *request {
	r := d.buf[d.head]
	d.buf[d.head] = nil
	d.head = (d.head + 1) % len(d.buf)
	d.size--
	return r
}

// removeIf drops, in order, the requests for which drop returns true.
func (d *deque) removeIf(drop func(*request) bool) {
	kept := 0
	for i := 0; i < d.size; i++ {
		r := d.at(i)
		if drop(r) {
			continue
		}
		d.buf[(d.head+kept)%len(d.buf)] = r
		kept++
	}
	for i := kept; i < d.size; i++ {
		d.buf[(d.head+i)%len(d.buf)] = nil
	}
	d.size = kept
}
