// W14 map_mixed_90_10: a sync.Map preloaded with 1_024 uint64 keys (value =
// key, untimed, see bench.MapRun); 2 goroutines each do 1_000_000 ops on key
// i%1024 over their own index range: i%10 == 9 stores i (an existing key), the
// rest load. Checked: 1_800_000 loads, all hits with value%1024 == key, and
// 200_000 stores. Unit: one op.
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
	bench.RunTimed("W14", "map_mixed_90_10", n, func() time.Duration {
		return bench.MapRun("W14", keys, perTask, [2]uint64{n / 10 * 9, n / 10}, func(m *sync.Map, lo, hi uint64) (hits, stores uint64) {
			for i := lo; i < hi; i++ {
				k := i % keys
				if i%10 == 9 {
					m.Store(k, i)
					stores++
				} else if v, ok := m.Load(k); ok {
					if v.(uint64)%keys != k {
						panic("W14: wrong value")
					}
					hits++
				}
			}
			return
		})
	})
}
