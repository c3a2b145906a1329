// W10 mutex_contended: 4 goroutines each increment a counter under one
// sync.Mutex 250_000 times; main waits for them (a separate WaitGroup) and
// checks the counter. Unit: one increment.
package main

import (
	"sync"

	"goro-bench/internal/bench"
)

const (
	tasks      = 4
	increments = 250_000
)

func main() {
	bench.Run("W10", "mutex_contended", tasks*increments, func() {
		var mu sync.Mutex
		var counter uint64
		var wg sync.WaitGroup
		wg.Add(tasks)
		for g := 0; g < tasks; g++ {
			go func() {
				defer wg.Done()
				for i := 0; i < increments; i++ {
					mu.Lock()
					counter++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if counter != tasks*increments {
			panic("W10: lost an increment")
		}
	})
}
