// W4 pingpong_unbuffered: two goroutines bounce a uint64 over two unbuffered
// channels, 200_000 round trips; the pinger checks every answer and main waits
// for both on a WaitGroup. Unit: one round trip.
package main

import "goro-bench/internal/bench"

const n = 200_000

func main() {
	bench.Run("W4", "pingpong_unbuffered", n, func() { bench.PingPong(n) })
}
