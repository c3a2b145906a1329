// W11 map_load_hits: a sync.Map preloaded with 1_024 uint64 keys (value =
// key); 2 goroutines each do 1_000_000 loads of key i%1024 over their own
// index range. The preload is untimed (see bench.MapRun). Checked: 2_000_000
// hits, each with value == key. Unit: one load.
package main

import (
	"sync"
	"time"

	"goro-bench/internal/bench"
)

const (
	keys    = 1_024
	perTask = 1_000_000
	n       = bench.MapTasks * perTask
)

func main() {
	bench.RunTimed("W11", "map_load_hits", n, func() time.Duration {
		return bench.MapRun("W11", keys, perTask, [2]uint64{n, 0}, func(m *sync.Map, lo, hi uint64) (hits, misses uint64) {
			for i := lo; i < hi; i++ {
				k := i % keys
				if v, ok := m.Load(k); ok {
					if v.(uint64) != k {
						panic("W11: wrong value")
					}
					hits++
				} else {
					misses++
				}
			}
			return
		})
	})
}
