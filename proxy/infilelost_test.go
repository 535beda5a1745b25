package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/leafproxy/leafproxy/internal/testkit/testwait"
)

// blockingFile is a LOCAL INFILE source that sends its first part, then
// waits for release before it ends.
type blockingFile struct {
	first   io.Reader
	release chan struct{}
}

func (f *blockingFile) Read(p []byte) (int, error) {
	if n, err := f.first.Read(p); n > 0 || !errors.Is(err, io.EOF) {
		return n, err
	}
	<-f.release
	return 0, io.EOF
}

// A backend connection that ends while the client sends its LOCAL INFILE
// data (the session killed, as mtr's loadxml does) closes the client's
// connection, as the server's own would: the client sees a lost
// connection, not an error packet from the proxy as the statement's answer.
func TestBackendLostDuringLocalInfile(t *testing.T) {
	needsMariaDB(t, "LOAD DATA LOCAL INFILE (go-mysql-server has local_infile off)")
	t.Parallel()
	ensureDB(t, sharedDB(t), "infilelost")
	sharedDB(t).Exec(t, "CREATE TABLE IF NOT EXISTS infilelost.t (s TEXT)")
	e := startProxy(t, sharedDB(t).Addr, nil)
	c, id := backendThread(t, e.open(t, "infilelost", ""))
	defer c.Close()
	f := &blockingFile{first: strings.NewReader(strings.Repeat("line\n", 1000)), release: make(chan struct{})}
	mysql.RegisterReaderHandler("infilelost", func() io.Reader { return f })
	defer mysql.DeregisterReaderHandler("infilelost")
	done := make(chan error, 1)
	go func() {
		_, err := c.ExecContext(context.Background(), "LOAD DATA LOCAL INFILE 'Reader::infilelost' INTO TABLE t")
		done <- err
	}()
	root := sharedDB(t).Open(t, "")
	testwait.For(t, "the LOAD DATA runs", func() bool {
		var n int
		_ = root.QueryRow("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = ? AND INFO LIKE 'LOAD DATA%'", id).Scan(&n)
		return n == 1
	})
	if _, err := root.Exec(fmt.Sprintf("KILL CONNECTION %d", id)); err != nil {
		t.Fatal(err)
	}
	if !threadGone(t, root, id, 10*time.Second) {
		t.Fatal("the killed thread is still there")
	}
	close(f.release)
	err := <-done
	var me *mysql.MySQLError
	if errors.As(err, &me) && me.Number == errBackendLost {
		t.Fatalf("LOAD DATA LOCAL on a killed backend connection: %v; want the connection closed, as directly", err)
	}
	if err == nil {
		t.Fatal("LOAD DATA LOCAL on a killed backend connection succeeded")
	}
}
