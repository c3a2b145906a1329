// W13 map_load_or_store_balanced: Go's BenchmarkLoadOrStoreBalanced
// (src/sync/map_bench_test.go) with 2 goroutines of 500_000 ops each. 128 keys
// preloaded (untimed, see bench.MapRun); goroutine g runs i over
// g*500_000..(g+1)*500_000; j = i%256; j < 128 does LoadOrStore(j, i), which
// must load the preloaded j; j >= 128 does LoadOrStore(i, i) of a key never
// seen before, which must store. Over i in 0..1_000_000 that is 500_032 loads
// and 499_968 stores (1_000_000 = 3906*256 + 64, the last 64 all loads), both
// checked. Unit: one op.
package main

import (
	"fmt"
	"sync"
	"time"

	"goro-bench/internal/bench"
)

const (
	hits, misses = 128, 128
	perTask      = 500_000
	n            = bench.MapTasks * perTask
)

func main() {
	bench.RunTimed("W13", "map_load_or_store_balanced", n, func() time.Duration {
		return bench.MapRun("W13", hits, perTask, [2]uint64{500_032, 499_968}, func(m *sync.Map, lo, hi uint64) (loads, stores uint64) {
			for i := lo; i < hi; i++ {
				j := i % (hits + misses)
				if j < hits {
					if v, loaded := m.LoadOrStore(j, i); !loaded || v.(uint64) != j {
						panic(fmt.Sprintf("W13: unexpected miss for %v", j))
					}
					loads++
				} else {
					if v, loaded := m.LoadOrStore(i, i); loaded {
						panic(fmt.Sprintf("W13: failed to store %v: existing value %v", i, v))
					}
					stores++
				}
			}
			return
		})
	})
}
