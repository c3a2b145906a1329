// W3 yield_many: 200 goroutines each call runtime.Gosched() 1_000 times; main
// waits for them on a WaitGroup. Unit: one yield.
package main

import (
	"runtime"
	"sync"

	"goro-bench/internal/bench"
)

const (
	tasks  = 200
	yields = 1_000
)

func main() {
	bench.Run("W3", "yield_many", tasks*yields, func() {
		var wg sync.WaitGroup
		wg.Add(tasks)
		for i := 0; i < tasks; i++ {
			go func() {
				for j := 0; j < yields; j++ {
					runtime.Gosched()
				}
				wg.Done()
			}()
		}
		wg.Wait()
	})
}
