package bench

import (
	"sync"
	"sync/atomic"
)

// SpawnMany is one run of W1: main starts n goroutines that each add 1 to a
// shared counter, and waits for all of them; it panics if an increment is lost.
func SpawnMany(n int) {
	var counter atomic.Int64
	var wg sync.WaitGroup
	wg.Add(n)
	for i := 0; i < n; i++ {
		go func() {
			counter.Add(1)
			wg.Done()
		}()
	}
	wg.Wait()
	if counter.Load() != int64(n) {
		panic("W1: lost an increment")
	}
}

// PingPong is one run of W4: two goroutines bounce a uint64 over two
// unbuffered channels n times; the pinger checks every answer.
func PingPong(n uint64) {
	ping := make(chan uint64)
	pong := make(chan uint64)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := uint64(0); i < n; i++ {
			ping <- i
			if v := <-pong; v != i+1 {
				panic("W4: wrong answer")
			}
		}
		close(ping) // ends the ponger
	}()
	go func() {
		defer wg.Done()
		for v := range ping {
			pong <- v + 1
		}
	}()
	wg.Wait()
}
