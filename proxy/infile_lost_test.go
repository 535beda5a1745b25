package proxy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// blockedFile is a LOCAL INFILE file that is asked for, then waits for
// release before it yields its bytes.
type blockedFile struct {
	asked, release chan struct{}
	r              io.Reader
}

func (f *blockedFile) Read(p []byte) (int, error) {
	if f.asked != nil {
		close(f.asked)
		f.asked = nil
		<-f.release
	}
	return f.r.Read(p)
}

// A backend that goes away while the client sends its LOCAL INFILE file (a
// KILL of its thread, mtr's loadxml) is a lost connection for the client,
// as directly: the proxy closes the connection without an error packet of
// its own (1158), which a client would take for the statement's answer.
// The file is small, so the client has sent all of it and reads the
// answer when the proxy finds the backend gone.
func TestBackendLostDuringLocalFile(t *testing.T) {
	ensureDB(t, shared, "lostfile")
	shared.Exec(t, "DROP TABLE IF EXISTS lostfile.t", "CREATE TABLE lostfile.t (s TEXT)")
	root := shared.Open(t, "")
	e := startProxy(t, shared.Addr, nil)
	db := e.open(t, "lostfile", "")
	f := &blockedFile{asked: make(chan struct{}), release: make(chan struct{}),
		r: bytes.NewReader(bytes.Repeat([]byte("a line of the file that is long enough to fill buffers\n"), 20))}
	asked := f.asked
	mysql.RegisterReaderHandler("lostfile", func() io.Reader { return f })
	defer mysql.DeregisterReaderHandler("lostfile")

	c, id := backendThread(t, db)
	defer c.Close()
	errc := make(chan error, 1)
	go func() {
		_, err := c.ExecContext(context.Background(), "LOAD DATA LOCAL INFILE 'Reader::lostfile' INTO TABLE t")
		errc <- err
	}()
	select {
	case <-asked:
	case err := <-errc:
		t.Fatalf("LOAD DATA ended before the file was asked for: %v", err)
	}
	if _, err := root.Exec("KILL ?", id); err != nil {
		t.Fatal(err)
	}
	if !threadGone(t, root, id, 5*time.Second) {
		t.Fatalf("backend thread %d still there after KILL", id)
	}
	close(f.release)
	err := <-errc
	var me *mysql.MySQLError
	if err == nil || errors.As(err, &me) && me.Number == errBackendLost {
		t.Fatalf("LOAD DATA LOCAL whose backend was killed during the file: %v, want a lost connection", err)
	}
	t.Logf("the client saw: %v", err)
}
