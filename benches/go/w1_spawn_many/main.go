// W1 spawn_many: main spawns 100_000 trivial goroutines, each adding 1 to a
// shared atomic counter, then waits for all of them on a WaitGroup.
// Unit: one goroutine.
package main

import "goro-bench/internal/bench"

const n = 100_000

func main() {
	bench.Run("W1", "spawn_many", n, func() { bench.SpawnMany(n) })
}
