package config

import (
	"fmt"

	"github.com/go-sql-driver/mysql"
	"go.yaml.in/yaml/v3"
)

// StoreList is sequences.store: one DSN, or a list of them in order of
// preference for a replicated store (a Galera cluster's nodes), which
// the proxy fails over between and back (allocator.StorePool). Written
// as a string or a YAML list; empty means the backend.
type StoreList []string

func (s *StoreList) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		var v string
		if err := n.Decode(&v); err != nil {
			return err
		}
		*s = nil
		if v != "" {
			*s = StoreList{v}
		}
		return nil
	case yaml.SequenceNode:
		var v []string
		if err := n.Decode(&v); err != nil {
			return fmt.Errorf("line %d: sequences.store: a DSN or a list of DSNs: %w", n.Line, err)
		}
		*s = v
		return nil
	}
	return fmt.Errorf("line %d: sequences.store: a DSN or a list of DSNs", n.Line)
}

// MarshalYAML writes one DSN as a string, several as a list.
func (s StoreList) MarshalYAML() (any, error) {
	switch len(s) {
	case 0:
		return "", nil
	case 1:
		return s[0], nil
	}
	return []string(s), nil
}

// Set reports whether a store is configured (else the backend is).
func (s StoreList) Set() bool { return len(s) > 0 }

// First is the preferred DSN ("" for none).
func (s StoreList) First() string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

// validateStore checks every DSN of sequences.store: each parses, names a
// database, and a list names one database on distinct servers.
func (c *Config) validateStore(add func(key, format string, a ...any)) {
	list := c.Sequences.Store
	key := func(i int) string {
		if len(list) == 1 {
			return "sequences.store"
		}
		return fmt.Sprintf("sequences.store[%d]", i)
	}
	seen := map[string]int{}
	db := ""
	for i, dsn := range list {
		mc, err := mysql.ParseDSN(dsn)
		switch {
		case dsn == "":
			add(key(i), "empty: give a DSN like user:password@tcp(host:3306)/leafproxy")
			continue
		case err != nil:
			add(key(i), "not a DSN like user:password@tcp(host:3306)/leafproxy: %v", err)
			continue
		case mc.DBName == "":
			add(key(i), "names no database: end the DSN with /leafproxy (or another name; it is created if missing)")
			continue
		}
		if j, dup := seen[mc.Addr]; dup {
			add(key(i), "%s is listed already (sequences.store[%d]): each entry is another node of the store", mc.Addr, j)
		}
		seen[mc.Addr] = i
		if i == 0 {
			db = mc.DBName
		} else if mc.DBName != db {
			add(key(i), "names database %q, sequences.store[0] %q: the nodes of one store hold one database", mc.DBName, db)
		}
	}
}
