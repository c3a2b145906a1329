package bench

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// Tally collects what the consumers of a channel workload received, so that
// each run can be checked: exactly the values 0..n, once each.
type Tally struct {
	sum, count atomic.Uint64
}

// Add records one consumer's totals.
func (t *Tally) Add(sum, count uint64) {
	t.sum.Add(sum)
	t.count.Add(count)
}

// Check panics unless the values 0..n were received, once each (by count and
// sum).
func (t *Tally) Check(id string, n uint64) {
	if c, s := t.count.Load(), t.sum.Load(); c != n || s != n*(n-1)/2 {
		panic(fmt.Sprintf("%s: wrong values received: count %d sum %d", id, c, s))
	}
}

// Produce starts `producers` goroutines that together send the values 0..n on
// ch (producer p its own contiguous slice); the last one to finish closes ch.
// Each is counted on wg.
func Produce(ch chan<- uint64, producers, n uint64, wg *sync.WaitGroup) {
	per := n / producers
	var left sync.WaitGroup
	left.Add(int(producers))
	wg.Add(int(producers))
	for p := uint64(0); p < producers; p++ {
		go func(p uint64) {
			defer wg.Done()
			for v := p * per; v < (p+1)*per; v++ {
				ch <- v
			}
			left.Done()
			if p == 0 {
				left.Wait()
				close(ch)
			}
		}(p)
	}
}

// Consume starts `consumers` goroutines that receive from ch until it is
// closed, adding what they got to t. Each is counted on wg.
func Consume(ch <-chan uint64, consumers int, t *Tally, wg *sync.WaitGroup) {
	wg.Add(consumers)
	for c := 0; c < consumers; c++ {
		go func() {
			defer wg.Done()
			var sum, count uint64
			for v := range ch {
				sum += v
				count++
			}
			t.Add(sum, count)
		}()
	}
}
