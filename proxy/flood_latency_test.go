package proxy

import (
	"database/sql"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/internal/testkit/testwait"
)

// floodChildEnv names the proxy address (and, after a comma, the number of
// silent connections) for the test binary re-executed as a flood.
const floodChildEnv = "LEAF_FLOOD_CHILD"

// runFloodChild holds n silent connections to addr, re-opening each as
// soon as the proxy drops it, until its standard input ends (the test that
// started it is done, or died). It prints the connections it opened.
func runFloodChild(spec string) {
	addr, ns, _ := strings.Cut(spec, ",")
	n, _ := strconv.Atoi(ns)
	stop := make(chan struct{})
	var opened atomic.Int64
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 4096)
			for {
				select {
				case <-stop:
					return
				default:
				}
				nc, err := net.DialTimeout("tcp", addr, 2*time.Second)
				if err != nil {
					continue
				}
				opened.Add(1)
				go func() { <-stop; nc.Close() }()
				for {
					if _, err := nc.Read(buf); err != nil {
						break
					}
				}
				nc.Close()
			}
		}()
	}
	_, _ = io.Copy(io.Discard, os.Stdin)
	close(stop)
	wg.Wait()
	fmt.Println(opened.Load())
}

// TestFloodLoginLatency (LEAF_FLOOD_LATENCY=1; issue 29 item 3): 4,000
// silent connections from 127.0.0.1, re-opened as soon as the proxy drops
// them, and logins from 127.0.0.2: how long does a login take, and where
// does its time go? The flood runs in another process (this test binary
// re-executed), as it would in a deployment: its client goroutines do not
// share the proxy's scheduler. Each login is split into the TCP connect
// (the kernel's accept queue), the wait for the greeting (the proxy's
// accept loop and handshake start), and the whole go-sql-driver login.
//
// It measures the proxy as it is and as it was, one after the other in
// the same run (LEAF_FLOOD_VARIANTS, default
// "doorman-shared,doorman-nojitter,doorman"):
//   - doorman: now; the accept loop greets, a silent connection has no
//     goroutine, silent connections have their own budget
//     (max_silent_handshakes) and deadlines spread over handshake_timeout
//     plus up to half of it;
//   - doorman-nojitter: the same, every deadline handshake_timeout;
//   - doorman-shared: silent connections under a budget of
//     max_handshakes, every deadline handshake_timeout (as before
//     max_silent_handshakes);
//   - goroutine: each connection has its own goroutine from the accept
//     (as before the doorman).
//
// It also reports what the proxy process's resident set and Go heap grew
// by per silent connection held, when the budget holds the whole flood.
func TestFloodLoginLatency(t *testing.T) {
	if os.Getenv("LEAF_FLOOD_LATENCY") == "" {
		t.Skip("set LEAF_FLOOD_LATENCY=1: a measurement, 4,000 connections")
	}
	variants := "doorman-shared,doorman-nojitter,doorman"
	if v := os.Getenv("LEAF_FLOOD_VARIANTS"); v != "" {
		variants = v
	}
	for _, v := range strings.Split(variants, ",") {
		t.Run(v, func(t *testing.T) { floodLoginLatency(t, v) })
	}
}

// residentBytes is this process's VmRSS (/proc/self/status); 0 if unknown.
func residentBytes() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// heapInUse is the Go heap and stacks in use after a collection that also
// returns what is free to the kernel (so residentBytes then counts what
// is live).
func heapInUse() int64 {
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapInuse + ms.StackInuse)
}

func floodLoginLatency(t *testing.T, variant string) {
	silent, tries := 4000, 100
	if lim := raiseNoFile(t); uint64(silent+500) > lim {
		silent = int(lim - 500)
	}
	if n, err := strconv.Atoi(os.Getenv("LEAF_FLOOD_TRIES")); err == nil && n > 0 {
		tries = n
	}
	e := startProxy(t, sharedDB(t).Addr, func(c *testConfig) {
		if n, err := strconv.Atoi(os.Getenv("LEAF_FLOOD_MAX_HANDSHAKES")); err == nil {
			c.Limits.MaxHandshakes = n
		}
		if n, err := strconv.Atoi(os.Getenv("LEAF_FLOOD_MAX_SILENT")); err == nil {
			c.Limits.MaxSilentHandshakes = n
		}
		if variant == "doorman-shared" {
			c.Limits.MaxSilentHandshakes = max(c.Limits.MaxHandshakes, DefaultMaxHandshakes)
		}
	}, func(s *Server) {
		s.front.GreetInGoroutine = variant == "goroutine"
		s.front.SilentSpreadOff = variant != "doorman"
	})
	heap0 := heapInUse()
	rss0 := residentBytes()
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), floodChildEnv+"="+e.addr+","+strconv.Itoa(silent))
	in, err := child.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	child.Stdout, child.Stderr = &out, &out
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		t1 := time.Now()
		in.Close()
		_ = child.Wait()
		t.Logf("flood process: %s connections opened; stopped in %v", strings.TrimSpace(out.String()), time.Since(t1).Round(time.Millisecond))
	}()
	tw := time.Now()
	testwait.For(t, "the flood under way", func() bool { // dropping handshakes, or holding the whole flood
		_, accepted := e.srv.Sessions()
		return e.srv.LoginStats().Dropped >= uint64(silent) || accepted >= uint64(silent)
	})
	t.Logf("flood under way after %v", time.Since(tw).Round(time.Millisecond))
	if held, ok := testwait.Until("the whole flood held", func() (int, bool) {
		e.srv.mu.Lock()
		defer e.srv.mu.Unlock()
		return e.srv.silent.N(), e.srv.silent.N() >= silent
	}, testwait.Within(5*time.Second)); ok == nil {
		heap := heapInUse() - heap0
		rss := residentBytes() - rss0
		t.Logf("%d silent connections held: resident set +%.1f MiB (%d bytes each), Go heap and stacks +%.1f MiB (%d bytes each)",
			held, float64(rss)/(1<<20), rss/int64(held), float64(heap)/(1<<20), heap/int64(held))
	}
	dropped0, t0 := e.srv.LoginStats().Dropped, time.Now()
	var dial, greet, login, wake []time.Duration
	var backlog []int
	// At least tries logins, and for three handshake timeouts (or
	// LEAF_FLOOD_DURATION): a flood the budget holds whole is cut and
	// re-opened at each.
	span := 3 * e.cfg.Limits.HandshakeTimeout
	if d, err := time.ParseDuration(os.Getenv("LEAF_FLOOD_DURATION")); err == nil {
		span = d
	}
	for i := 0; i < tries || time.Since(t0) < span; i++ {
		backlog = append(backlog, acceptQueue(e.addr))
		// The scheduler: how long a new goroutine waits to run.
		ch := make(chan time.Time)
		t0 := time.Now()
		go func() { ch <- time.Now() }()
		wake = append(wake, (<-ch).Sub(t0))

		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}, Timeout: 5 * time.Second}
		t0 = time.Now()
		nc, err := d.Dial("tcp", e.addr)
		if err != nil {
			t.Logf("dial: %v", err)
			continue
		}
		t1 := time.Now()
		buf := make([]byte, 1)
		_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err = nc.Read(buf)
		t2 := time.Now()
		nc.Close()
		if err != nil {
			t.Logf("greeting: %v", err)
			continue
		}
		dial, greet = append(dial, t1.Sub(t0)), append(greet, t2.Sub(t1))
		db, _ := sql.Open("mysql", from2DSN(e, "app", "secret"))
		t3 := time.Now()
		if err := db.Ping(); err != nil {
			t.Logf("login: %v", err)
		} else {
			login = append(login, time.Since(t3))
		}
		db.Close()
	}
	rate := float64(e.srv.LoginStats().Dropped-dropped0) / time.Since(t0).Seconds()
	q := func(ds []time.Duration) string {
		if len(ds) == 0 {
			return "-"
		}
		slices.Sort(ds)
		return ds[len(ds)/2].Round(time.Millisecond).String() + " p50, " + ds[len(ds)*99/100].Round(time.Millisecond).String() + " p99, " + ds[len(ds)-1].Round(time.Millisecond).String() + " max"
	}
	slices.Sort(backlog)
	inUse := e.srv.front.DoormanBudget()
	t.Logf("%s: max_handshakes %d, max_silent_handshakes %d (%d in use), %d silent connections (another process), %.0f handshakes dropped/s over %v: accept queue %d p50, %d max; a new goroutine runs after %s; TCP connect %s; greeting after connect %s; whole login (go-sql-driver Ping, %d of %d) %s; %+v",
		variant, e.cfg.Limits.MaxHandshakes, e.cfg.Limits.MaxSilentHandshakes, inUse, silent, rate, time.Since(t0).Round(time.Millisecond), backlog[len(backlog)/2], backlog[len(backlog)-1], q(wake), q(dial), q(greet), len(login), len(wake), q(login), e.srv.LoginStats())
}

// acceptQueue is the length of the kernel's accept queue of the listener
// at addr: connections the kernel has set up and the proxy has not
// accepted yet (ss's Recv-Q of a listening socket; a netlink query
// filtered in the kernel, unlike reading /proc/net/tcp, which walks every
// socket); -1 if unknown.
func acceptQueue(addr string) int {
	_, port, _ := net.SplitHostPort(addr)
	out, err := exec.Command("ss", "-Hltn", "sport = :"+port).Output()
	if f := strings.Fields(string(out)); err == nil && len(f) > 1 {
		if n, err := strconv.Atoi(f[1]); err == nil {
			return n
		}
	}
	return -1
}
