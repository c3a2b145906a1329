// Package bench is the shared driver of the Go comparison programs: it runs a
// workload once as a warm-up, then -runs more times, and prints one line with
// the median ns per unit, in the format the goro benchmark tables read.
package bench

import (
	"flag"
	"fmt"
	"runtime"
	"sort"
	"time"
)

var runs = flag.Int("runs", 15, "measured runs after one warm-up run")

// Run times `once` (one run of the workload, doing `units` units of work) and
// prints e.g. `W1 spawn_many go1.19.8 median_ns_per_unit=431.2 runs=15`.
// GOMAXPROCS comes from the environment, as the Go runtime reads it itself.
func Run(id, name string, units int, once func()) {
	flag.Parse()
	once() // warm-up: grows stacks, heaps and the free-G lists
	perUnit := make([]float64, *runs)
	for i := range perUnit {
		start := time.Now()
		once()
		perUnit[i] = float64(time.Since(start).Nanoseconds()) / float64(units)
	}
	fmt.Printf("%s %s %s median_ns_per_unit=%.1f runs=%d\n",
		id, name, runtime.Version(), median(perUnit), *runs)
}

func median(xs []float64) float64 {
	sort.Float64s(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}
