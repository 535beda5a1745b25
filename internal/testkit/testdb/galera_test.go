package testdb

import (
	"testing"
	"time"
)

// TestGaleraCluster: three nodes replicate synchronously; after one is
// killed the other two keep a primary component and take writes.
func TestGaleraCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("Galera cluster start takes ~10 s")
	}
	t0 := time.Now()
	c := StartGalera(t, 3)
	t.Logf("3-node cluster up in %v", time.Since(t0).Round(time.Millisecond))
	c.Nodes[0].Exec(t, "CREATE DATABASE g", "CREATE TABLE g.t (k INT PRIMARY KEY, v BIGINT)", "INSERT INTO g.t VALUES (1, 10)")
	var v int64
	if err := c.Nodes[2].Open(t, "g").QueryRow("SELECT v FROM t WHERE k = 1").Scan(&v); err != nil || v != 10 {
		t.Fatalf("read on node 3: %d, %v", v, err)
	}
	c.Nodes[0].Kill(t)
	t1 := time.Now()
	if err := c.WaitSize(2, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	t.Logf("node 1 evicted in %v", time.Since(t1).Round(time.Millisecond))
	c.Nodes[1].Exec(t, "UPDATE g.t SET v = 11 WHERE k = 1")
	if err := c.Nodes[2].Open(t, "g").QueryRow("SELECT v FROM t WHERE k = 1").Scan(&v); err != nil || v != 11 {
		t.Fatalf("read on node 3 after failover: %d, %v", v, err)
	}
}
