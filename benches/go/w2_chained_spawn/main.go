// W2 chained_spawn: each goroutine spawns the next, 100_000 deep; the last one
// signals main over a channel. Unit: one goroutine.
package main

import "goro-bench/internal/bench"

const n = 100_000

// link spawns the rest of the chain (left more goroutines), or signals done.
func link(left int, done chan<- struct{}) {
	if left == 0 {
		done <- struct{}{}
		return
	}
	go link(left-1, done)
}

func main() {
	bench.Run("W2", "chained_spawn", n, func() {
		done := make(chan struct{})
		go link(n-1, done) // this goroutine plus n-1 more: n in all
		<-done
	})
}
