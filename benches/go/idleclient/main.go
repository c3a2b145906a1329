// The client of benches/http_abuse.sh --idle: holds N idle keep-alive connections to an HTTP
// server and measures what they cost it.
//
//  1. Reads the server's VmRSS and thread count (/proc/PID/status).
//  2. Opens N connections (at most -dialers dials at a time, so that the listener's backlog
//     does not overflow), each sending one `GET PATH HTTP/1.1` and reading its response; each
//     connection then stays open and idle.
//  3. Once all N have been answered, waits -settle seconds and reads the server's status again.
//  4. Sends one more request on every connection at once and counts those that fail (an
//     error, a closed connection, a status other than 200, a wrong body, or a server asking
//     to close).
//  5. Closes them all, waits -settle seconds and reads the server's status again.
//  6. Repeats 2-5 for -rounds rounds in all: memory the server's allocator kept from one round
//     serves the next, where memory leaked by closed connections would add up.
//  7. Checks that a fresh connection is answered.
//
// It prints its progress on stderr and one line `RESULT {json}` on stdout. Requests are written
// by hand on the raw connections (no http.Transport and its pool) and responses parsed with
// http.ReadResponse. The descriptor limit is raised to its hard limit (to N + 1024 first, which
// root may).
//
// Usage: idleclient -addr 127.0.0.1:8080 -n 10000 -pid PID [-path /plaintext] [-settle 5]
// [-rounds 1] [-dialers 128] [-timeout 30]
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// procStatus is what /proc/PID/status says of the server.
type procStatus struct {
	RSSKiB  int64 `json:"rss_kib"`
	Threads int64 `json:"threads"`
}

func readStatus(pid int) (procStatus, error) {
	var st procStatus
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return st, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case "VmRSS:":
			st.RSSKiB, _ = strconv.ParseInt(f[1], 10, 64)
		case "Threads:":
			st.Threads, _ = strconv.ParseInt(f[1], 10, 64)
		}
	}
	return st, nil
}

// failures counts errors by kind, keeping one example of each.
type failures struct {
	mu      sync.Mutex
	count   map[string]int
	example map[string]string
}

func newFailures() *failures {
	return &failures{count: map[string]int{}, example: map[string]string{}}
}

func (f *failures) add(kind string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.count[kind]++
	if _, ok := f.example[kind]; !ok && err != nil {
		f.example[kind] = err.Error()
	}
}

func (f *failures) total() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.count {
		n += c
	}
	return n
}

// summary: "kind: count (example)", most frequent first.
func (f *failures) summary() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	kinds := make([]string, 0, len(f.count))
	for k := range f.count {
		kinds = append(kinds, k)
	}
	sort.Slice(kinds, func(i, j int) bool { return f.count[kinds[i]] > f.count[kinds[j]] })
	out := make([]string, 0, len(kinds))
	for _, k := range kinds {
		out = append(out, fmt.Sprintf("%s: %d (%s)", k, f.count[k], f.example[k]))
	}
	return out
}

const wantBody = "Hello, World!"

// roundTrip sends one request on c and reads its response; "" if it was answered as it should
// be, else the kind of failure.
func roundTrip(c net.Conn, br *bufio.Reader, req []byte, timeout time.Duration) (string, error) {
	c.SetDeadline(time.Now().Add(timeout))
	defer c.SetDeadline(time.Time{})
	if _, err := c.Write(req); err != nil {
		return "write", err
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return "closed by server", err
		}
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			return "timeout", err
		}
		return "read", err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return "read body", err
	}
	if resp.StatusCode != http.StatusOK {
		return "status", fmt.Errorf("status %d", resp.StatusCode)
	}
	if !bytes.Equal(body, []byte(wantBody)) {
		return "body", fmt.Errorf("body %q", body)
	}
	if resp.Close {
		return "server asked to close", fmt.Errorf("Connection: close")
	}
	return "", nil
}

// raiseFdLimit lifts RLIMIT_NOFILE to at least want (root may raise the hard limit), else to
// the hard limit.
func raiseFdLimit(want uint64) uint64 {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0
	}
	if lim.Max < want {
		up := syscall.Rlimit{Cur: want, Max: want}
		if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &up) == nil {
			return want
		}
	}
	lim.Cur = lim.Max
	syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
	syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim)
	return lim.Cur
}

// One round: N connections opened, held idle, asked again and closed.
type round struct {
	Established   int        `json:"established"`
	ConnectSecs   float64    `json:"connect_secs"`
	ConnectErrors []string   `json:"connect_errors"`
	Idle          procStatus `json:"idle"`
	Rechecked     int        `json:"rechecked"`
	RecheckFailed int        `json:"recheck_failed"`
	RecheckSecs   float64    `json:"recheck_secs"`
	RecheckErrors []string   `json:"recheck_errors"`
	AfterClose    procStatus `json:"after_close"`
}

type result struct {
	N              int        `json:"n"`
	FdLimit        uint64     `json:"fd_limit"`
	SettleSecs     float64    `json:"settle_secs"`
	Before         procStatus `json:"before"`
	Rounds         []round    `json:"rounds"`
	FreshConnOK    bool       `json:"fresh_conn_ok"`
	FreshConnError string     `json:"fresh_conn_error,omitempty"`
	ServerGone     bool       `json:"server_gone,omitempty"`
}

// client holds what every round shares.
type client struct {
	addr    string
	n       int
	dialers int
	timeout time.Duration
	settle  time.Duration
	req     []byte
	status  func(what string) procStatus
}

// round opens n connections, one request each, waits, measures the server, asks again on
// every connection, closes them all, waits and measures again.
func (cl *client) round(r int) round {
	var res round
	// Each connection's goroutine, once answered, waits for `recheck` to be closed.
	recheck := make(chan struct{})
	var established, answered sync.WaitGroup
	var ok, rechecked int64
	connFail := newFailures()
	recheckFail := newFailures()
	conns := make([]net.Conn, cl.n)
	sem := make(chan struct{}, cl.dialers)
	start := time.Now()
	established.Add(cl.n)
	answered.Add(cl.n)
	for i := 0; i < cl.n; i++ {
		sem <- struct{}{}
		go func(i int) {
			c, err := net.DialTimeout("tcp", cl.addr, cl.timeout)
			if err != nil {
				<-sem
				connFail.add("dial", err)
				established.Done()
				answered.Done()
				return
			}
			br := bufio.NewReaderSize(c, 512)
			kind, err := roundTrip(c, br, cl.req, cl.timeout)
			<-sem
			if kind != "" {
				connFail.add(kind, err)
				c.Close()
				established.Done()
				answered.Done()
				return
			}
			conns[i] = c
			atomic.AddInt64(&ok, 1)
			established.Done()
			<-recheck
			atomic.AddInt64(&rechecked, 1)
			if kind, err := roundTrip(c, br, cl.req, cl.timeout); kind != "" {
				recheckFail.add(kind, err)
			}
			answered.Done()
		}(i)
	}
	established.Wait()
	res.ConnectSecs = time.Since(start).Seconds()
	res.Established = int(atomic.LoadInt64(&ok))
	res.ConnectErrors = connFail.summary()
	fmt.Fprintf(os.Stderr, "idleclient: round %d: %d of %d connections answered in %.2f s\n", r, res.Established, cl.n, res.ConnectSecs)
	for _, e := range res.ConnectErrors {
		fmt.Fprintf(os.Stderr, "idleclient:   %s\n", e)
	}

	time.Sleep(cl.settle)
	res.Idle = cl.status(fmt.Sprintf("round %d: %d idle connections", r, res.Established))

	start = time.Now()
	close(recheck)
	answered.Wait()
	res.RecheckSecs = time.Since(start).Seconds()
	res.Rechecked = int(atomic.LoadInt64(&rechecked))
	res.RecheckFailed = recheckFail.total()
	res.RecheckErrors = recheckFail.summary()
	fmt.Fprintf(os.Stderr, "idleclient: round %d: second request on %d connections: %d failed, %.2f s\n",
		r, res.Rechecked, res.RecheckFailed, res.RecheckSecs)
	for _, e := range res.RecheckErrors {
		fmt.Fprintf(os.Stderr, "idleclient:   %s\n", e)
	}

	for _, c := range conns {
		if c != nil {
			c.Close()
		}
	}
	time.Sleep(cl.settle)
	res.AfterClose = cl.status(fmt.Sprintf("round %d: after closing", r))
	return res
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "the server's address")
	n := flag.Int("n", 10000, "idle connections to hold")
	pid := flag.Int("pid", 0, "the server's process id, for /proc/PID/status")
	path := flag.String("path", "/plaintext", "the path requested")
	settle := flag.Float64("settle", 5, "seconds to wait before each measurement")
	rounds := flag.Int("rounds", 1, "rounds on the same server")
	dialers := flag.Int("dialers", 128, "connections being opened at once")
	timeoutSecs := flag.Float64("timeout", 30, "seconds a dial or a request may take")
	flag.Parse()
	if *pid <= 0 || *n <= 0 || *dialers <= 0 || *rounds <= 0 {
		fmt.Fprintln(os.Stderr, "idleclient: -pid and a positive -n are required")
		os.Exit(2)
	}
	res := result{N: *n, SettleSecs: *settle}
	res.FdLimit = raiseFdLimit(uint64(*n) + 1024)
	if res.FdLimit < uint64(*n)+16 {
		fmt.Fprintf(os.Stderr, "idleclient: descriptor limit %d is too low for %d connections\n", res.FdLimit, *n)
		os.Exit(1)
	}
	cl := &client{
		addr:    *addr,
		n:       *n,
		dialers: *dialers,
		timeout: time.Duration(*timeoutSecs * float64(time.Second)),
		settle:  time.Duration(*settle * float64(time.Second)),
		req:     []byte(fmt.Sprintf("GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", *path, *addr)),
		status: func(what string) procStatus {
			st, err := readStatus(*pid)
			if err != nil {
				res.ServerGone = true
				fmt.Fprintf(os.Stderr, "idleclient: %s: %v\n", what, err)
			} else {
				fmt.Fprintf(os.Stderr, "idleclient: %s: server RSS %d KiB, %d threads\n", what, st.RSSKiB, st.Threads)
			}
			return st
		},
	}
	res.Before = cl.status("before")
	for r := 1; r <= *rounds; r++ {
		res.Rounds = append(res.Rounds, cl.round(r))
	}
	if c, err := net.DialTimeout("tcp", *addr, cl.timeout); err != nil {
		res.FreshConnError = err.Error()
	} else {
		kind, err := roundTrip(c, bufio.NewReader(c), cl.req, cl.timeout)
		c.Close()
		if kind == "" {
			res.FreshConnOK = true
		} else {
			res.FreshConnError = fmt.Sprintf("%s: %v", kind, err)
		}
	}
	out, _ := json.Marshal(&res)
	fmt.Printf("RESULT %s\n", out)
}
