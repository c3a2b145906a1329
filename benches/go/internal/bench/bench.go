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

// Runs is the -runs flag, for programs that time their own runs (growth).
func Runs() int { return *runs }

// Run times `once` (one run of the workload, doing `units` units of work) and
// prints e.g. `W1 spawn_many go1.19.8 median_ns_per_unit=431.2 runs=15`.
// GOMAXPROCS comes from the environment, as the Go runtime reads it itself.
func Run(id, name string, units int, once func()) {
	RunTimed(id, name, units, func() time.Duration {
		start := time.Now()
		once()
		return time.Since(start)
	})
}

// RunTimed is Run for a workload with an untimed setup: `once` does one run
// and returns the duration of its timed part only (as b.ResetTimer() does in
// a Go benchmark).
func RunTimed(id, name string, units int, once func() time.Duration) {
	flag.Parse()
	once() // warm-up: grows stacks, heaps and the free-G lists
	perUnit := make([]float64, *runs)
	for i := range perUnit {
		perUnit[i] = float64(once().Nanoseconds()) / float64(units)
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
