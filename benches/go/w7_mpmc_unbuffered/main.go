// W7 mpmc_unbuffered: as W6 with an unbuffered channel, 400_000 messages in
// total. Unit: one message.
package main

import (
	"sync"

	"goro-bench/internal/bench"
)

const n = 400_000

func main() {
	bench.Run("W7", "mpmc_unbuffered", n, func() {
		ch := make(chan uint64)
		var wg sync.WaitGroup
		var t bench.Tally
		bench.Consume(ch, 4, &t, &wg)
		bench.Produce(ch, 4, n, &wg)
		wg.Wait()
		t.Check("W7", n)
	})
}
