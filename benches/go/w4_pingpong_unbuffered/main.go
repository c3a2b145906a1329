// W4 pingpong_unbuffered: two goroutines bounce a uint64 over two unbuffered
// channels, 200_000 round trips; the pinger checks every answer and main waits
// for both on a WaitGroup. Unit: one round trip.
package main

import (
	"sync"

	"goro-bench/internal/bench"
)

const n = 200_000

func main() {
	bench.Run("W4", "pingpong_unbuffered", n, func() {
		ping := make(chan uint64)
		pong := make(chan uint64)
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := uint64(0); i < n; i++ {
				ping <- i
				if v := <-pong; v != i+1 {
					panic("W4: wrong answer")
				}
			}
			close(ping) // ends the ponger
		}()
		go func() {
			defer wg.Done()
			for v := range ping {
				pong <- v + 1
			}
		}()
		wg.Wait()
	})
}
