// growth: the cost of W1 (spawn) and W4 (unbuffered ping-pong) as the number
// of live goroutines grows. For each point, `live` goroutines park on a gate
// channel, W1 and W4 are timed (one warm-up run, then -runs runs, median),
// then the gate closes. The same program as goro's benches/growth.rs; prints
// e.g. `growth W1 live=1000 go1.19.8 median_ns_per_unit=131.0 runs=7`.
//
// Usage: go run ./growth [-runs N] [points...]   (default points: 1e3 1e4 1e5 1e6;
// -runs is the shared bench flag, default 15; benches/growth.py passes 7)
package main

import (
	"flag"
	"fmt"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"time"

	"goro-bench/internal/bench"
)

const (
	spawns     = 100_000
	roundTrips = 100_000
)

func w1() time.Duration {
	start := time.Now()
	bench.SpawnMany(spawns)
	return time.Since(start)
}

func w4() time.Duration {
	start := time.Now()
	bench.PingPong(roundTrips)
	return time.Since(start)
}

func median(xs []float64) float64 {
	sort.Float64s(xs)
	return xs[len(xs)/2]
}

func main() {
	flag.Parse()
	points := []int{1_000, 10_000, 100_000, 1_000_000}
	if flag.NArg() > 0 {
		points = points[:0]
		for _, a := range flag.Args() {
			n, err := strconv.Atoi(a)
			if err != nil {
				panic(err)
			}
			points = append(points, n)
		}
	}
	for _, live := range points {
		gate := make(chan struct{})
		var parked sync.WaitGroup
		parked.Add(live)
		for i := 0; i < live; i++ {
			go func() {
				defer parked.Done()
				<-gate
			}()
		}
		for runtime.NumGoroutine() <= live {
			runtime.Gosched()
		}
		for _, w := range []struct {
			id    string
			units int
			once  func() time.Duration
		}{{"W1", spawns, w1}, {"W4", roundTrips, w4}} {
			w.once()
			perUnit := make([]float64, bench.Runs())
			for i := range perUnit {
				perUnit[i] = float64(w.once().Nanoseconds()) / float64(w.units)
			}
			fmt.Printf("growth %s live=%d %s median_ns_per_unit=%.1f runs=%d\n",
				w.id, live, runtime.Version(), median(perUnit), bench.Runs())
		}
		close(gate)
		parked.Wait()
	}
}
