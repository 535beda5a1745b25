package integration

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"
)

// A 1,000,000-row result (~95 MB) streamed through the in-process proxy
// while the process heap stays under 32 MB. The client (go-sql-driver) runs
// in the same process, so the figure bounds proxy and client together.
func TestProxyStreamMillionRows(t *testing.T) {
	b := newBackend(t)
	b.Open(t, "app").Close()
	p := startProxy(t, proxyConfig(b))
	db := p.open(t, "app", "app", "")

	runtime.GC()
	var mu sync.Mutex
	var maxInuse, maxAlloc uint64
	ctx, cancel := context.WithCancel(context.Background())
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			mu.Lock()
			maxInuse = max(maxInuse, ms.HeapInuse)
			maxAlloc = max(maxAlloc, ms.HeapAlloc)
			mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()

	start := time.Now()
	rows, err := db.Query("SELECT seq, REPEAT('x', 80) FROM seq_1_to_1000000")
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	var n, sum int64
	var seq int64
	var pad []byte
	for rows.Next() {
		if err := rows.Scan(&seq, &pad); err != nil {
			t.Fatal(err)
		}
		if len(pad) != 80 {
			t.Fatalf("row %d: %d bytes of padding", seq, len(pad))
		}
		n++
		sum += seq
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	elapsed := time.Since(start)
	cancel()
	<-sampled

	if n != 1_000_000 || sum != 1_000_000*1_000_001/2 {
		t.Fatalf("streamed %d rows (sum %d), want 1000000", n, sum)
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("1,000,000 rows through the proxy in %v; max HeapInuse %.1f MB, max HeapAlloc %.1f MB",
		elapsed.Round(time.Millisecond), float64(maxInuse)/(1<<20), float64(maxAlloc)/(1<<20))
	if maxInuse > 32<<20 {
		t.Fatalf("heap in use reached %.1f MB, limit 32 MB", float64(maxInuse)/(1<<20))
	}
}
