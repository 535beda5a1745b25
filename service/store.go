package service

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"

	"github.com/go-sql-driver/mysql"

	"github.com/leafproxy/leafproxy/allocator"
	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/internal/sqltext"
)

// InitStore prepares the allocation store as `leafproxy init` and start-up
// do: the store's database is created when missing (database `leafproxy` on
// the backend by default, or the one sequences.store names), then
// leaf_alloc, leaf_worker, leaf_snowflake_layout and the configured tags;
// when a tag uses snowflake, the configured layout is recorded in the store
// (or checked against the recorded one: a difference is an error wrapping
// snowflake.ErrLayoutMismatch). Errors name the config key to fix.
func InitStore(ctx context.Context, cfg *config.Config, report func(format string, args ...any)) error {
	if cfg.Sequences.Store.Set() {
		if err := createStoreDatabase(ctx, cfg.Sequences.Store); err != nil {
			return explainStoreError(cfg, "create the allocation store's database", err)
		}
	}
	ac, err := AllocatorConfig(cfg)
	if err != nil {
		return err
	}
	if err := allocator.InitStore(ctx, &ac, report); err != nil {
		return explainStoreError(cfg, "prepare the allocation store", err)
	}
	if err := allocator.CheckSnowflakeLayout(ctx, &ac, report); err != nil {
		return explainStoreError(cfg, "record or check the snowflake layout", err)
	}
	return nil
}

// createStoreDatabase creates the database a custom sequences.store
// names, on the first of its nodes that answers (a replicated store
// replicates it), connecting without it first, as allocator.InitStore
// does for the default store.
func createStoreDatabase(ctx context.Context, dsns config.StoreList) error {
	var errs []error
	for _, dsn := range dsns {
		err := createStoreDatabaseOn(ctx, dsn)
		if err == nil {
			return nil
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// createStoreDatabaseOn is createStoreDatabase on the node of one DSN.
func createStoreDatabaseOn(ctx context.Context, dsn string) error {
	mc, err := mysql.ParseDSN(dsn)
	if err != nil {
		return fmt.Errorf("parse DSN: %w", err)
	}
	if mc.DBName == "" {
		return nil // config.Validate refuses this; nothing to create
	}
	name := mc.DBName
	mc.DBName = ""
	db, err := sql.Open("mysql", mc.FormatDSN())
	if err != nil {
		return err
	}
	defer db.Close()
	var exists int
	err = db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?", name).Scan(&exists)
	if err == nil && exists > 0 {
		return nil // no CREATE privilege needed for a database that is there
	}
	if err != nil {
		return fmt.Errorf("look for database %s on %s: %w", name, mc.Addr, err)
	}
	if _, err := db.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS "+sqltext.QuoteIdent(name)); err != nil {
		return fmt.Errorf("create database %s on %s: %w", name, mc.Addr, err)
	}
	return nil
}

// ConfigError is a failure to reach or use the backend or the allocation
// store, naming the configuration key to fix.
type ConfigError struct {
	Key  string // e.g. backend.password, sequences.store
	Msg  string // what went wrong, for a person
	Fix  string // what to change
	Err  error
	What string // what was being done
}

func (e *ConfigError) Error() string {
	s := e.Key + ": " + e.Msg
	if e.What != "" {
		s += " while trying to " + e.What
	}
	if e.Fix != "" {
		s += " (" + e.Fix + ")"
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *ConfigError) Unwrap() error { return e.Err }

// MySQL error numbers that mean "these credentials or grants are wrong".
const (
	erDBAccessDenied       = 1044 // user may not use this database
	erAccessDenied         = 1045 // wrong user or password
	erTableAccessDenied    = 1142 // command denied on a table
	erAccessDeniedNoPasswd = 1698 // e.g. root with unix_socket only
	erSpecificAccessDenied = 1227
)

// explainStoreError turns a login, grant or network failure against the
// allocation store into a ConfigError naming the key to fix (the backend's
// account for the default store, sequences.store otherwise). Other errors
// are wrapped with what was being done.
func explainStoreError(cfg *config.Config, what string, err error) error {
	if err == nil {
		return nil
	}
	var ce *ConfigError
	if errors.As(err, &ce) {
		return err
	}
	addr, user, db := storeIdentity(cfg)
	custom := cfg.Sequences.Store.Set()
	var me *mysql.MySQLError
	switch {
	case errors.As(err, &me) && (me.Number == erAccessDenied || me.Number == erAccessDeniedNoPasswd):
		if custom {
			return &ConfigError{Key: "sequences.store", Err: me, What: what,
				Msg: fmt.Sprintf("the allocation store %s refused login as %q", addr, user),
				Fix: "fix the user or password in the sequences.store DSN"}
		}
		return &ConfigError{Key: "backend.password", Err: me, What: what,
			Msg: fmt.Sprintf("the backend %s refused login as %q", addr, user),
			Fix: fmt.Sprintf("fix backend.user / backend.password; the allocation store, database %s on the backend, uses that account unless sequences.store names another", db)}
	case errors.As(err, &me) && (me.Number == erDBAccessDenied || me.Number == erTableAccessDenied || me.Number == erSpecificAccessDenied):
		key := "sequences.store"
		if !custom {
			key = "backend.user"
		}
		return &ConfigError{Key: key, Err: me, What: what,
			Msg: fmt.Sprintf("user %q may not use database %s on %s", user, db, addr),
			Fix: fmt.Sprintf("GRANT ALL ON %s.* TO that user, or point sequences.store at a database it may use", sqltext.QuoteIdent(db))}
	case isNetError(err):
		if custom {
			return &ConfigError{Key: "sequences.store", Err: err, What: what,
				Msg: fmt.Sprintf("cannot reach the allocation store %s", addr),
				Fix: "start it or fix the address in sequences.store"}
		}
		return &ConfigError{Key: "backend.addr", Err: err, What: what,
			Msg: fmt.Sprintf("cannot reach the backend %s", addr),
			Fix: fmt.Sprintf("start it or fix backend.addr; it holds the allocation store, database %s", db)}
	}
	return fmt.Errorf("%s on %s (database %s): %w", what, addr, db, err)
}

// explainBackendError is explainStoreError for the backend's own account
// (the one sessions use unless users[].backend_user says otherwise).
func explainBackendError(cfg *config.Config, what string, err error) error {
	if err == nil {
		return nil
	}
	var me *mysql.MySQLError
	switch {
	case errors.As(err, &me) && (me.Number == erAccessDenied || me.Number == erAccessDeniedNoPasswd):
		return &ConfigError{Key: "backend.password", Err: me, What: what,
			Msg: fmt.Sprintf("the backend %s refused login as %q", cfg.Backend.Addr, cfg.Backend.User),
			Fix: "fix backend.user / backend.password"}
	case isNetError(err):
		return &ConfigError{Key: "backend.addr", Err: err, What: what,
			Msg: fmt.Sprintf("cannot reach the backend %s", cfg.Backend.Addr),
			Fix: "start it or fix backend.addr"}
	}
	return fmt.Errorf("%s on the backend %s: %w", what, cfg.Backend.Addr, err)
}

func isNetError(err error) bool {
	var ne net.Error
	var oe *net.OpError
	return errors.As(err, &oe) || errors.As(err, &ne) || errors.Is(err, mysql.ErrInvalidConn)
}

// storeIdentity is the address, user and database of the allocation store
// (no password), for messages and the status page.
func storeIdentity(cfg *config.Config) (addr, user, db string) {
	mc, err := mysql.ParseDSN(cfg.StoreDSN())
	if err != nil {
		return "?", "?", "?"
	}
	return mc.Addr, mc.User, mc.DBName
}
