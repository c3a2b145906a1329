// W12 map_load_misses: as W11, but half of the loads are of absent keys: even
// i loads present key (i/2)%1024, odd i absent key 1024+(i/2)%1024. The
// preload is untimed (see bench.MapRun). Checked: exactly 1_000_000 hits (value
// == key) and 1_000_000 misses. Unit: one load.
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
	bench.RunTimed("W12", "map_load_misses", n, func() time.Duration {
		return bench.MapRun("W12", keys, perTask, [2]uint64{n / 2, n / 2}, func(m *sync.Map, lo, hi uint64) (hits, misses uint64) {
			for i := lo; i < hi; i++ {
				k := (i/2)%keys + (i%2)*keys
				if v, ok := m.Load(k); ok {
					if v.(uint64) != k {
						panic("W12: wrong value")
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
