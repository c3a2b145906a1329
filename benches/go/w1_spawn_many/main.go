// W1 spawn_many: main spawns 100_000 trivial goroutines, each adding 1 to a
// shared atomic counter, then waits for all of them on a WaitGroup.
// Unit: one goroutine.
package main

import (
	"sync"
	"sync/atomic"

	"goro-bench/internal/bench"
)

const n = 100_000

func main() {
	bench.Run("W1", "spawn_many", n, func() {
		var counter atomic.Int64
		var wg sync.WaitGroup
		wg.Add(n)
		for i := 0; i < n; i++ {
			go func() {
				counter.Add(1)
				wg.Done()
			}()
		}
		wg.Wait()
		if counter.Load() != n {
			panic("W1: lost an increment")
		}
	})
}
