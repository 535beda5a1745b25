package bench

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
	"github.com/leafproxy/leafproxy/internal/testkit/testwait"
	"github.com/leafproxy/leafproxy/loadgen"
	"github.com/leafproxy/leafproxy/service"
)

// TestIDAPIBench measures the HTTP ID API's GET /api/segment/get/{tag}
// (keep-alive, one request at a time per connection, as Leaf's clients
// call it) beside SQL SELECT NEXTVAL('tag') through the proxy, on one
// leafproxy and one tag each, at LEAFPROXY_BENCH_CONNS connections (32),
// alternating every round. The HTTP client is a minimal HTTP/1.1 loop
// (like wrk's), the SQL client go-sql-driver (loadgen); both run in this
// process beside the proxy, so on a 2-core machine they share its CPUs.
func TestIDAPIBench(t *testing.T) {
	benchEnabled(t)
	dur := envDuration(t, "LEAFPROXY_BENCH_DURATION", 5*time.Second)
	warm := envDuration(t, "LEAFPROXY_BENCH_WARMUP", time.Second)
	rounds := envInt(t, "LEAFPROXY_BENCH_ROUNDS", 3)
	conns := envInt(t, "LEAFPROXY_BENCH_CONNS", 32)
	const token = "bench-token-0123456789abcdef"

	srv := testdb.Start(t)
	srv.Exec(t, "CREATE DATABASE bench")
	cfg := config.Default()
	cfg.Listen = "127.0.0.1:0"
	cfg.Backend.Addr = srv.Addr
	cfg.Users = []config.User{{Name: "app", Password: "secret"}}
	cfg.Sequences.WaitTimeout = config.Duration(5 * time.Second)
	cfg.Sequences.Tags = map[string]config.Tag{"h": {Generator: "segment", Step: 1000}, "q": {Generator: "segment", Step: 1000}}
	cfg.Log.Level = "warn"
	cfg.IDAPI.Listen = "127.0.0.1:0"
	cfg.IDAPI.Tokens = []config.APIToken{{Name: "bench", Token: token, Tags: []string{"h"}}}
	cfg.ApplyDefaults()
	if err := service.ValidateConfig(cfg); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	svc, err := service.New(ctx, cfg, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- svc.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("leafproxy Serve: %v", err)
		}
	})
	apiAddr := testwait.Value(t, "the ID API", func() (string, bool) {
		if a := svc.IDAPIAddr(); a != nil {
			return a.String(), true
		}
		return "", false
	})
	dsn := dsnAt(t, srv.DSN("bench"), ln.Addr().String(), "app", "secret")
	req := "GET /api/segment/get/h HTTP/1.1\r\nHost: " + apiAddr + "\r\nAuthorization: Bearer " + token + "\r\n\r\n"

	names := []string{"HTTP GET /api/segment/get/h", "SQL SELECT NEXTVAL('q')"}
	cells := map[string]*cell{names[0]: {}, names[1]: {}}
	for round := range rounds {
		for i := range names {
			name := names[(i+round)%2]
			var res loadgen.Result
			if strings.HasPrefix(name, "HTTP") {
				res, err = httpLoad(apiAddr, req, conns, dur, warm)
			} else {
				res, err = loadgen.Run(context.Background(), loadgen.Config{DSN: dsn, Query: "SELECT NEXTVAL('q')", Conns: conns, Duration: dur, Warmup: warm})
			}
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			t.Logf("round %d, %s: %.0f QPS, p50 %s, p99 %s, p999 %s, %d errors", round+1, name, res.QPS, res.Latency.P50, res.Latency.P99, res.Latency.P999, res.Errors)
			cells[name].add(res)
		}
	}
	out := new(strings.Builder)
	fmt.Fprintf(out, "\nID API vs SQL NEXTVAL: %d conns, %s per cell (+%s warm-up), %d rounds, GOMAXPROCS %d, %d CPUs\n\n", conns, dur, warm, rounds, runtime.GOMAXPROCS(0), runtime.NumCPU())
	fmt.Fprintln(out, "| target | conns | QPS | p50 | p99 | p999 | max | in-process CPU/req | errors |")
	fmt.Fprintln(out, "|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, name := range names {
		c := cells[name]
		s := c.hist.Summary()
		fmt.Fprintf(out, "| %s | %d | %.0f | %s | %s | %s | %s | %.1fus | %d |\n", name, conns, c.qps(), us(s.P50), us(s.P99), us(s.P999), us(s.Max), float64(c.cpuPerReq())/1e3, c.errors)
		if c.firstErr != "" {
			t.Errorf("%s: %d errors, first: %s", name, c.errors, c.firstErr)
		}
	}
	t.Log(out.String())
}

// httpLoad sends req back to back on conns keep-alive connections to addr
// for warm+dur and measures the requests that started after warm and
// ended before warm+dur: each answer must be 200 with a body.
func httpLoad(addr, req string, conns int, dur, warm time.Duration) (loadgen.Result, error) {
	type worker struct {
		c                *net.TCPConn
		r                *bufio.Reader
		hist             loadgen.Histogram
		requests, errors uint64
		firstErr         error
	}
	ws := make([]*worker, conns)
	for i := range ws {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return loadgen.Result{}, err
		}
		defer c.Close()
		ws[i] = &worker{c: c.(*net.TCPConn), r: bufio.NewReaderSize(c, 4096)}
	}
	begin := time.Now()
	start, end := begin.Add(warm), begin.Add(warm+dur)
	var cpu time.Duration
	cpuDone := make(chan struct{})
	go func() {
		defer close(cpuDone)
		time.Sleep(time.Until(start)) // the measured window's start and end: a clock, not a wait
		before := processCPU()
		time.Sleep(time.Until(end))
		cpu = processCPU() - before
	}()
	var wg sync.WaitGroup
	reqb := []byte(req)
	for _, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				t0 := time.Now()
				if !t0.Before(end) {
					return
				}
				err := roundTrip(w.c, w.r, reqb)
				t1 := time.Now()
				if t0.Before(start) || t1.After(end) {
					if err != nil {
						return
					}
					continue
				}
				w.requests++
				if err != nil {
					w.errors++
					if w.firstErr == nil {
						w.firstErr = err
					}
					return
				}
				w.hist.Record(int64(t1.Sub(t0)))
			}
		}()
	}
	wg.Wait()
	<-cpuDone
	res := loadgen.Result{Conns: conns, Elapsed: dur, Hist: new(loadgen.Histogram), ProcessCPU: cpu}
	for _, w := range ws {
		res.Hist.Merge(&w.hist)
		res.Requests += w.requests
		res.Errors += w.errors
		if res.FirstError == "" && w.firstErr != nil {
			res.FirstError = w.firstErr.Error()
		}
	}
	res.QPS = float64(res.Requests) / dur.Seconds()
	res.Latency = res.Hist.Summary()
	return res, nil
}

// roundTrip writes one request and reads its response: a 200 status line,
// headers with Content-Length, and a non-empty body.
func roundTrip(c *net.TCPConn, r *bufio.Reader, req []byte) error {
	if _, err := c.Write(req); err != nil {
		return err
	}
	status, err := r.ReadSlice('\n')
	if err != nil {
		return err
	}
	if len(status) < 12 || string(status[9:12]) != "200" {
		return fmt.Errorf("status %q", status)
	}
	n := -1
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return err
		}
		if len(line) <= 2 {
			break
		}
		if v, ok := strings.CutPrefix(string(line), "Content-Length: "); ok {
			n, _ = strconv.Atoi(strings.TrimSpace(v))
		}
	}
	if n <= 0 {
		return fmt.Errorf("no body length")
	}
	_, err = r.Discard(n)
	return err
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
