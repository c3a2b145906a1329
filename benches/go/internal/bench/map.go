package bench

import (
	"fmt"
	"runtime"
	"sync"
	"time"
)

// MapTasks is the number of goroutines of the map workloads (W11-W14).
const MapTasks = 2

// MapRun does one run of a map workload, as benches/sync.rs does: a fresh
// sync.Map preloaded with LoadOrStore(k, k) for k in 0..keys and primed with
// 2*keys loads of k%keys (as Go's sync/map_bench_test.go does), then a GC (as
// testing.B does before each run); all that is untimed. The timed part starts
// MapTasks goroutines, goroutine g calling task(m, g*perTask, (g+1)*perTask)
// over its own index range, and waits for them. It panics unless the sums of
// the two counts that the tasks return are `want`, and returns the duration
// of the timed part.
func MapRun(id string, keys, perTask uint64, want [2]uint64, task func(m *sync.Map, lo, hi uint64) (uint64, uint64)) time.Duration {
	var m sync.Map
	for k := uint64(0); k < keys; k++ {
		if _, loaded := m.LoadOrStore(k, k); loaded {
			panic(id + ": preload found a key")
		}
	}
	for i := uint64(0); i < 2*keys; i++ {
		if v, ok := m.Load(i % keys); !ok || v.(uint64) != i%keys {
			panic(id + ": priming missed a key")
		}
	}
	runtime.GC()
	var counts [MapTasks][2]uint64
	var wg sync.WaitGroup
	start := time.Now()
	wg.Add(MapTasks)
	for g := uint64(0); g < MapTasks; g++ {
		go func(g uint64) {
			defer wg.Done()
			counts[g][0], counts[g][1] = task(&m, g*perTask, (g+1)*perTask)
		}(g)
	}
	wg.Wait()
	elapsed := time.Since(start)
	var got [2]uint64
	for _, c := range counts {
		got[0] += c[0]
		got[1] += c[1]
	}
	if got != want {
		panic(fmt.Sprintf("%s: wrong counts %v, want %v", id, got, want))
	}
	return elapsed
}
