// W9 waitgroup: 4 goroutines each do 250_000 Add(1)/Done() pairs on one
// WaitGroup that also counts the 4 goroutines themselves (main adds 4, each
// goroutine calls Done once at its end), then main waits on it. Each goroutine
// adds its pair count to an atomic before its last Done; main checks the total,
// so an early wake-up shows. Unit: one pair.
package main

import (
	"sync"
	"sync/atomic"

	"goro-bench/internal/bench"
)

const (
	tasks = 4
	pairs = 250_000
)

func main() {
	bench.Run("W9", "waitgroup", tasks*pairs, func() {
		var wg sync.WaitGroup
		var done atomic.Uint64
		wg.Add(tasks)
		for g := 0; g < tasks; g++ {
			go func() {
				for i := 0; i < pairs; i++ {
					wg.Add(1)
					wg.Done()
				}
				done.Add(pairs)
				wg.Done()
			}()
		}
		wg.Wait()
		if done.Load() != tasks*pairs {
			panic("W9: Wait returned early")
		}
	})
}
