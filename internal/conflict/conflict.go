// Package conflict says whether a failed store write is a write conflict:
// an answer from a live store that the same transaction, tried again, is
// expected to get through, as opposed to a store that is down or refuses
// the job. On a Galera cluster these are routine whenever two nodes take
// writes for the same row (certification failures, which MariaDB reports
// as a deadlock) and while a node joins (1047 until it is synced); on one
// server, InnoDB deadlocks and lock wait timeouts. The allocators retry
// them, count them apart from store outages, and log them below error
// level: a conflict is not an outage, and pages nobody.
package conflict

import (
	"errors"

	"github.com/go-sql-driver/mysql"
)

// The MariaDB/MySQL error numbers read as write conflicts.
const (
	// Deadlock is ER_LOCK_DEADLOCK (SQLSTATE 40001): an InnoDB deadlock,
	// and how Galera reports a transaction that lost certification to
	// another node's ("WSREP detected deadlock/conflict").
	Deadlock = 1213
	// LockWaitTimeout is ER_LOCK_WAIT_TIMEOUT: a row lock held longer than
	// innodb_lock_wait_timeout by another transaction.
	LockWaitTimeout = 1205
	// NotReady is ER_UNKNOWN_COM_ERROR as a Galera node answers it while
	// it is not synced ("WSREP has not yet prepared node for application
	// use"): joining, donating, or cut off from the primary component.
	NotReady = 1047
	// RecordChanged is ER_CHECKREAD: the row changed since the
	// transaction read it (MariaDB's innodb_snapshot_isolation).
	RecordChanged = 1020
)

// Code returns the error number of err's MySQL error when it is a write
// conflict, 0 otherwise (nil, a network error, any other answer).
func Code(err error) uint16 {
	var me *mysql.MySQLError
	if !errors.As(err, &me) {
		return 0
	}
	switch me.Number {
	case Deadlock, LockWaitTimeout, NotReady, RecordChanged:
		return me.Number
	}
	return 0
}

// Is reports whether err is a write conflict (Code is not 0).
func Is(err error) bool { return Code(err) != 0 }
