// W15 timers: main starts 100_000 goroutines that each sleep 1 ms and then
// signal a WaitGroup; main waits for all of them.
// Unit: one goroutine, timed as (elapsed - 1 ms) / 100_000: the 1 ms that
// every goroutine must sleep is not the runtime's cost. The 1 ms is taken off
// each run before the median, as benches/runtime.rs does for the Rust rows.
package main

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"goro-bench/internal/bench"
)

const (
	n     = 100_000
	sleep = time.Millisecond
)

func main() {
	bench.RunTimed("W15", "timers", n, func() time.Duration {
		var woke atomic.Int64
		var wg sync.WaitGroup
		start := time.Now()
		wg.Add(n)
		for i := 0; i < n; i++ {
			go func() {
				time.Sleep(sleep)
				woke.Add(1)
				wg.Done()
			}()
		}
		wg.Wait()
		elapsed := time.Since(start)
		if woke.Load() != n || elapsed < sleep {
			panic(fmt.Sprintf("W15: %d goroutines woke in %v", woke.Load(), elapsed))
		}
		return elapsed - sleep
	})
}
