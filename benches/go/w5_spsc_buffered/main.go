// W5 spsc_buffered: one producer goroutine, one consumer goroutine, a channel
// of cap 128, 2_000_000 uint64 messages; main waits for both. Unit: one message.
package main

import (
	"sync"

	"goro-bench/internal/bench"
)

const n = 2_000_000

func main() {
	bench.Run("W5", "spsc_buffered", n, func() {
		ch := make(chan uint64, 128)
		var wg sync.WaitGroup
		var t bench.Tally
		bench.Consume(ch, 1, &t, &wg)
		bench.Produce(ch, 1, n, &wg)
		wg.Wait()
		t.Check("W5", n)
	})
}
