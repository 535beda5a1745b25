package proxy

import (
	"database/sql"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/internal/testkit/testwait"
)

// TestHandshakeFloodShare: 127.0.0.1 keeps 1,000 silent connections open,
// re-opening each as soon as the proxy drops it (max_handshakes and
// max_silent_handshakes half that, so the proxy drops them all the time), while 127.0.0.2 logs in 20 times.
// The host holding the most pending handshakes gives one up when the
// budget is full, so the other host keeps its share: at least 90% of its
// logins succeed (with the oldest-first rule alone, most of them failed).
func TestHandshakeFloodShare(t *testing.T) {
	silent, tries := 1000, 20
	if testing.Short() {
		silent, tries = 500, 10
	}
	if lim := raiseNoFile(t); uint64(2*silent+500) > lim {
		silent = int(lim-500) / 2
	}
	e := startProxy(t, sharedDB(t).Addr, func(c *testConfig) {
		c.Limits.MaxHandshakes = silent / 2
		c.Limits.MaxSilentHandshakes = silent / 2
		c.Limits.HandshakeTimeout = 5 * time.Second
	})
	stop := make(chan struct{})
	var flood sync.WaitGroup
	var reopened atomic.Int64
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
					time.Sleep(10 * time.Millisecond) // back off before dialling again: the flood's pace, not a wait
					continue
				}
				go func() { <-stop; nc.Close() }()
				for { // hold it, say nothing, until the proxy drops it
					if _, err := nc.Read(buf); err != nil {
						break
					}
				}
				nc.Close()
				reopened.Add(1)
			}
		}()
	}
	defer func() { close(stop); flood.Wait() }()
	// The flood is on: the proxy is dropping handshakes.
	testwait.For(t, "the flood under way", func() bool { return e.srv.LoginStats().Dropped >= uint64(silent) },
		testwait.Detail(func() string { return fmt.Sprintf("%+v", e.srv.LoginStats()) }))
	ok := 0
	start := time.Now()
	for range tries {
		db, _ := sql.Open("mysql", from2DSN(e, "app", "secret"))
		var v int
		if err := db.QueryRow("SELECT 1").Scan(&v); err == nil {
			ok++
		} else {
			t.Logf("login from 127.0.0.2: %v", err)
		}
		db.Close()
	}
	st := e.srv.LoginStats()
	t.Logf("%d/%d logins from 127.0.0.2 in %v during the flood; %d silent connections re-opened, %d handshakes dropped",
		ok, tries, time.Since(start).Round(time.Millisecond), reopened.Load(), st.Dropped)
	if ok < tries*9/10 {
		t.Errorf("only %d of %d logins from a host not flooding succeeded", ok, tries)
	}
}
