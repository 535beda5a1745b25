package proxy

import (
	"database/sql"
	"net"
	"os"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestFloodLoginLatency (LEAF_FLOOD_LATENCY=1; issue 29 item 3): 4,000
// silent connections from 127.0.0.1, re-opened as soon as the proxy drops
// them, and logins from 127.0.0.2: where does a login's time go? Each
// login is split into the TCP connect (the kernel's accept queue), the
// wait for the greeting (the proxy's accept loop and handshake start),
// and the rest (the login itself).
func TestFloodLoginLatency(t *testing.T) {
	if os.Getenv("LEAF_FLOOD_LATENCY") == "" {
		t.Skip("set LEAF_FLOOD_LATENCY=1: an investigation, 4,000 connections")
	}
	silent, tries := 4000, 40
	if lim := raiseNoFile(t); uint64(2*silent+500) > lim {
		silent = int(lim-500) / 2
	}
	e := startProxy(t, shared.Addr, nil)
	stop := make(chan struct{})
	var flood sync.WaitGroup
	for range silent {
		flood.Add(1)
		go func() {
			defer flood.Done()
			buf := make([]byte, 4096)
			for {
				select {
				case <-stop:
					return
				default:
				}
				nc, err := net.DialTimeout("tcp", e.addr, 2*time.Second)
				if err != nil {
					continue
				}
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
	defer func() { close(stop); flood.Wait() }()
	waitFor(t, func() bool { return e.srv.LoginStats().Dropped >= uint64(silent) }, "the flood under way")
	var dial, greet, login, wake []time.Duration
	for range tries {
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
	q := func(ds []time.Duration) string {
		if len(ds) == 0 {
			return "-"
		}
		slices.Sort(ds)
		return ds[len(ds)/2].Round(time.Millisecond).String() + " p50, " + ds[len(ds)*99/100].Round(time.Millisecond).String() + " p99, " + ds[len(ds)-1].Round(time.Millisecond).String() + " max"
	}
	t.Logf("%d silent connections: a new goroutine runs after %s; TCP connect %s; greeting after connect %s; whole login (go-sql-driver Ping) %s; %+v",
		silent, q(wake), q(dial), q(greet), q(login), e.srv.LoginStats())
}
