// W8 select_fanin: two producer goroutines, each on its own channel of cap 16,
// 500_000 messages each; one consumer goroutine selects over both until both
// are closed (a closed channel is set to nil, so its case is never ready
// again). Main waits for all three. Unit: one message.
package main

import (
	"sync"

	"goro-bench/internal/bench"
)

const n = 1_000_000

func main() {
	bench.Run("W8", "select_fanin", n, func() {
		a := make(chan uint64, 16)
		b := make(chan uint64, 16)
		var wg sync.WaitGroup
		var t bench.Tally
		wg.Add(3)
		go func() {
			defer wg.Done()
			var sum, count uint64
			ra, rb := a, b
			for ra != nil || rb != nil {
				select {
				case v, ok := <-ra:
					if !ok {
						ra = nil
						continue
					}
					sum += v
					count++
				case v, ok := <-rb:
					if !ok {
						rb = nil
						continue
					}
					sum += v
					count++
				}
			}
			t.Add(sum, count)
		}()
		for i, ch := range []chan uint64{a, b} {
			go func(ch chan uint64, base uint64) {
				defer wg.Done()
				for v := base; v < base+n/2; v++ {
					ch <- v
				}
				close(ch)
			}(ch, uint64(i)*n/2)
		}
		wg.Wait()
		t.Check("W8", n)
	})
}
