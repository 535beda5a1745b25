package conflict

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/go-sql-driver/mysql"
)

func TestCode(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want uint16
	}{
		{"nil", nil, 0},
		{"deadlock", &mysql.MySQLError{Number: 1213, Message: "Deadlock found when trying to get lock; try restarting transaction"}, Deadlock},
		{"galera certification, wrapped", fmt.Errorf("commit leaf_alloc transaction: %w",
			&mysql.MySQLError{Number: 1213, Message: "WSREP detected deadlock/conflict and aborted the transaction. Try restarting the transaction"}), Deadlock},
		{"node not ready", fmt.Errorf("fetch: %w", &mysql.MySQLError{Number: 1047, Message: "WSREP has not yet prepared node for application use"}), NotReady},
		{"lock wait timeout", &mysql.MySQLError{Number: 1205}, LockWaitTimeout},
		{"record changed", &mysql.MySQLError{Number: 1020}, RecordChanged},
		{"access denied", &mysql.MySQLError{Number: 1045}, 0},
		{"duplicate key", &mysql.MySQLError{Number: 1062}, 0},
		{"no such table", &mysql.MySQLError{Number: 1146}, 0},
		{"bad connection", mysql.ErrInvalidConn, 0},
		{"timeout", context.DeadlineExceeded, 0},
		{"other", errors.New("dial tcp: connection refused"), 0},
	} {
		if got := Code(c.err); got != c.want {
			t.Errorf("%s: Code = %d, want %d", c.name, got, c.want)
		}
		if got := Is(c.err); got != (c.want != 0) {
			t.Errorf("%s: Is = %v, want %v", c.name, got, c.want != 0)
		}
	}
}
