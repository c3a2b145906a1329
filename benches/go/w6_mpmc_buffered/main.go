// W6 mpmc_buffered: 4 producer and 4 consumer goroutines on one channel of cap
// 128, 2_000_000 messages in total; main waits for all. Unit: one message.
package main

import (
	"sync"

	"goro-bench/internal/bench"
)

const n = 2_000_000

func main() {
	bench.Run("W6", "mpmc_buffered", n, func() {
		ch := make(chan uint64, 128)
		var wg sync.WaitGroup
		var t bench.Tally
		bench.Consume(ch, 4, &t, &wg)
		bench.Produce(ch, 4, n, &wg)
		wg.Wait()
		t.Check("W6", n)
	})
}
