package testdb

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Cluster is a MariaDB Galera cluster of throwaway nodes on loopback, each
// a Server (Addr, DSN, Open, Exec, Kill, Stop work as for a lone server).
// Galera replicates synchronously: a commit is acknowledged only once every
// node of the primary component has the write set, so the loss of a node
// loses no acknowledged write.
type Cluster struct {
	Nodes []*Server
	// gcomm lists every node's group-communication address.
	gcomm []string
}

// galeraProvider finds Debian's galera-4 library.
func galeraProvider() (string, error) {
	for _, p := range []string{
		"/usr/lib/galera/libgalera_smm.so",
		"/usr/lib/galera-4/libgalera_smm.so",
		"/usr/lib64/galera-4/libgalera_smm.so",
		"/usr/lib64/galera/libgalera_smm.so",
		"/usr/lib/libgalera_smm.so",
	} {
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	return "", fmt.Errorf("libgalera_smm.so not found: install Debian's galera-4 (apt-get install -y galera-4; scripts/test.sh does when it runs as root)")
}

// StartGalera starts an n-node Galera cluster and stops it when the test
// ends. It skips the test (with the reason) when galera-4 is not installed.
//
// The nodes' data directories are copies of one bootstrapped node's, so
// joiners start with the cluster's state and need no state transfer (no
// rsync or mariabackup). Failure detection is tuned for tests: a killed
// node is evicted after about 2-3 s (production keeps Galera's defaults).
func StartGalera(tb testing.TB, n int) *Cluster {
	tb.Helper()
	provider, err := galeraProvider()
	if err != nil {
		tb.Skipf("Galera test skipped: %v", err)
	}
	tmpl, err := prepareTemplate()
	if err != nil {
		Unavailable(tb, err)
	}
	c := &Cluster{}
	tb.Cleanup(c.Close)
	type ports struct{ sql, gcomm, ist int }
	var ps []ports
	for range n {
		var p ports
		for _, q := range []*int{&p.sql, &p.gcomm, &p.ist} {
			if *q, err = freePort(); err != nil {
				tb.Fatal(err)
			}
		}
		ps = append(ps, p)
		c.gcomm = append(c.gcomm, net.JoinHostPort("127.0.0.1", strconv.Itoa(p.gcomm)))
	}
	for i, p := range ps {
		dir, err := os.MkdirTemp("", fmt.Sprintf("leafproxy-galera%d-", i+1))
		if err != nil {
			tb.Fatal(err)
		}
		if err := os.Mkdir(filepath.Join(dir, "tmp"), 0o700); err != nil {
			tb.Fatal(err)
		}
		s := &Server{Dir: dir, Port: p.sql, Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(p.sql))}
		s.extra = []string{
			"--wsrep-on=ON",
			"--wsrep-provider=" + provider,
			"--wsrep-cluster-name=leafproxy-test",
			"--wsrep-cluster-address=gcomm://" + strings.Join(c.gcomm, ","),
			fmt.Sprintf("--wsrep-node-name=node%d", i+1),
			"--wsrep-node-address=" + c.gcomm[i],
			"--wsrep-node-incoming-address=" + s.Addr,
			"--wsrep-provider-options=" + strings.Join([]string{
				"gmcast.listen_addr=tcp://" + c.gcomm[i],
				"ist.recv_addr=127.0.0.1:" + strconv.Itoa(p.ist),
				"gcache.size=32M",
				"evs.keepalive_period=PT0.3S",
				"evs.inactive_check_period=PT0.5S",
				"evs.suspect_timeout=PT1.5S",
				"evs.inactive_timeout=PT3S",
				"evs.install_timeout=PT3S",
			}, ";"),
			// Joiners are copies of the cluster's state and only ever need
			// an incremental transfer; the SST script then runs in bypass
			// mode and, for mysqldump, only tells the joiner its position
			// over SQL (no rsync daemon, no extra port).
			"--wsrep-sst-method=mysqldump",
			"--wsrep-sst-receive-address=" + s.Addr,
			"--wsrep-sst-auth=root:",
			"--wsrep-slave-threads=2",
			"--binlog-format=ROW",
			"--innodb-autoinc-lock-mode=2",
			"--default-storage-engine=InnoDB",
		}
		c.Nodes = append(c.Nodes, s)
	}

	// Bootstrap node 1 once, shut it down cleanly (its grastate.dat then
	// records the cluster's uuid and seqno, safe to bootstrap), and give
	// every node a copy of that data directory.
	first := c.Nodes[0]
	if out, err := exec.Command("cp", "-a", filepath.Join(tmpl, "data"), filepath.Join(first.Dir, "data")).CombinedOutput(); err != nil {
		tb.Fatalf("copy template data dir: %v: %s", err, out)
	}
	if err := c.startNode(0, true); err != nil {
		tb.Fatal(err)
	}
	if err := first.stop(syscall.SIGTERM); err != nil {
		tb.Fatal(err)
	}
	for _, s := range c.Nodes[1:] {
		if out, err := exec.Command("cp", "-a", filepath.Join(first.Dir, "data"), filepath.Join(s.Dir, "data")).CombinedOutput(); err != nil {
			tb.Fatalf("copy node 1 data dir: %v: %s", err, out)
		}
		os.Remove(filepath.Join(s.Dir, "data", "gvwstate.dat"))
	}
	if err := c.startNode(0, true); err != nil {
		tb.Fatal(err)
	}
	for i := 1; i < n; i++ {
		if err := c.startNode(i, false); err != nil {
			tb.Fatal(err)
		}
	}
	if err := c.WaitSize(n, 60*time.Second); err != nil {
		tb.Fatal(err)
	}
	return c
}

// startNode starts node i (bootstrap: as a new cluster) and waits until it
// is synced with the primary component.
func (c *Cluster) startNode(i int, bootstrap bool) error {
	s := c.Nodes[i]
	s.mu.Lock()
	extra := s.extra[:len(s.extra):len(s.extra)]
	if bootstrap {
		extra = append(extra, "--wsrep-new-cluster")
	}
	saved := s.extra
	s.extra = extra
	s.mu.Unlock()
	err := s.start()
	s.mu.Lock()
	s.extra = saved
	s.mu.Unlock()
	if err != nil {
		var logs strings.Builder
		for j, o := range c.Nodes {
			if j != i && o.Running() {
				fmt.Fprintf(&logs, "\nnode %d error log:\n%s", j+1, o.errorLogTail())
			}
		}
		return fmt.Errorf("galera node %d: %w%s", i+1, err, logs.String())
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		st, err := s.Status("wsrep_local_state_comment", "wsrep_ready")
		if err == nil && st["wsrep_local_state_comment"] == "Synced" && st["wsrep_ready"] == "ON" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("galera node %d not synced after 60s (%v, %v); error log:\n%s", i+1, st, err, s.errorLogTail())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// RestartNode starts a stopped or killed node again; it rejoins the
// cluster (by incremental state transfer from a live node's cache).
func (c *Cluster) RestartNode(tb testing.TB, i int) {
	tb.Helper()
	if err := c.startNode(i, false); err != nil {
		tb.Fatal(err)
	}
}

// Status reads global status variables of a node.
func (s *Server) Status(names ...string) (map[string]string, error) {
	db, err := sql.Open("mysql", s.DSN(""))
	if err != nil {
		return nil, err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	out := map[string]string{}
	for _, n := range names {
		var v string
		if err := db.QueryRowContext(ctx, "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = ?", strings.ToUpper(n)).Scan(&v); err != nil {
			return out, err
		}
		out[n] = v
	}
	return out, nil
}

// WaitSize waits until every running node is in a primary component of
// size n.
func (c *Cluster) WaitSize(n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		ok := true
		var last map[string]string
		for _, s := range c.Nodes {
			if !s.Running() {
				continue
			}
			st, err := s.Status("wsrep_cluster_size", "wsrep_cluster_status", "wsrep_ready")
			last = st
			if err != nil || st["wsrep_cluster_size"] != strconv.Itoa(n) || st["wsrep_cluster_status"] != "Primary" || st["wsrep_ready"] != "ON" {
				ok = false
				break
			}
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("galera cluster not at size %d after %v (last status %v)", n, timeout, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Close kills every node and removes their directories.
func (c *Cluster) Close() {
	for _, s := range c.Nodes {
		s.Close()
	}
}
