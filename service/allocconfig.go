package service

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/leafproxy/leafproxy/allocator"
	"github.com/leafproxy/leafproxy/allocator/snowflake"
	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/rewriter"
)

// The configuration in each domain package's own terms: the allocator's
// Config, the snowflake layouts, the rewriter's rules. DomainRules has
// already refused what these cannot map.

// AllocatorConfig is the allocator's part of the configuration.
func AllocatorConfig(c *config.Config) (allocator.Config, error) {
	global, err := SnowflakeLayout(c.Snowflake)
	if err != nil {
		return allocator.Config{}, fmt.Errorf("snowflake: %w", err)
	}
	sf := allocator.Snowflake{
		Layout:        global,
		LeaseWorkerID: c.Snowflake.WorkerID == "auto",
		MaxBackward:   c.Snowflake.MaxBackward.D(),
		LeaseTTL:      c.Snowflake.LeaseTTL.D(),
		StateFile:     c.Snowflake.StateFile,
	}
	if sf.Identity, err = snowflakeIdentity(c); err != nil {
		return allocator.Config{}, err
	}
	if c.Snowflake.RandomStart != nil {
		sf.RandomStart = *c.Snowflake.RandomStart
	}
	if !sf.LeaseWorkerID {
		if sf.WorkerID, err = strconv.ParseInt(c.Snowflake.WorkerID, 10, 64); err != nil {
			return allocator.Config{}, fmt.Errorf("snowflake.worker_id: %q is not a number or auto", c.Snowflake.WorkerID)
		}
	}
	tags := make(map[string]allocator.Tag, len(c.Sequences.Tags))
	for name, t := range c.Sequences.Tags {
		at := allocator.Tag{Generator: t.Generator, Step: t.Step}
		if t.Generator == config.GeneratorSnowflake {
			if at.Layout, err = tagLayout(t.TagLayout, global); err != nil {
				return allocator.Config{}, fmt.Errorf("sequences.tags.%s: %w", name, err)
			}
			at.OwnLayout = t.IsSet()
		}
		tags[name] = at
	}
	rules := make([]allocator.Rule, 0, len(c.Tables))
	for _, t := range c.Tables {
		rules = append(rules, allocator.Rule{Table: t.Table, Column: t.Column, Tag: t.Tag, PerTable: t.PerTable})
	}
	return allocator.Config{
		StoreDSN:            c.StoreDSN(),
		StoreDSNs:           c.StoreDSNs(),
		CreateStoreDatabase: !c.Sequences.Store.Set(),
		BackendAddr:         c.Backend.Addr,
		BackendDSN:          backendDSN(c),
		StoreTimeout:        c.Backend.ConnectTimeout.D(),
		Owner:               allocator.Owner(c.Listen),
		AutoCreate:          c.Sequences.AutoCreate,
		DefaultStep:         c.Sequences.DefaultStep,
		WaitTimeout:         c.Sequences.WaitTimeout.D(),
		MaxLoaders:          c.Sequences.MaxLoaders,
		RepairMargin:        c.Sequences.RepairMargin,
		Tags:                tags,
		Rules:               rules,
		Snowflake:           sf,
	}, nil
}

// backendDSN reaches the backend as the proxy's backend account, with no
// default database (rule tables are found in information_schema).
func backendDSN(c *config.Config) string {
	mc := mysql.NewConfig()
	mc.Net = config.Network(c.Backend.Addr)
	mc.Addr = c.Backend.Addr
	mc.User = c.Backend.User
	mc.Passwd = c.Backend.Password
	mc.Timeout = c.Backend.ConnectTimeout.D()
	return mc.FormatDSN()
}

// RewriterRules is the tables section as the rewriter's rules.
func RewriterRules(c *config.Config) []rewriter.Rule {
	rules := make([]rewriter.Rule, 0, len(c.Tables))
	for _, t := range c.Tables {
		rules = append(rules, rewriter.Rule{Table: t.Table, Column: t.Column, Tag: t.Tag, Exclude: t.Exclude, PerTable: t.PerTable, Zero: rewriter.Zero(t.Zero)})
	}
	return rules
}

// SnowflakeLayout is the bit layout the snowflake section describes,
// checked by snowflake.Layout.Validate: the layout's limits are the
// snowflake package's only.
func SnowflakeLayout(s config.Snowflake) (snowflake.Layout, error) {
	epoch, err := s.EpochTime()
	if err != nil {
		return snowflake.Layout{}, err
	}
	if s.TimeBits < 0 || s.WorkerBits < 0 || s.SequenceBits < 0 {
		return snowflake.Layout{}, fmt.Errorf("time_bits %d, worker_bits %d, sequence_bits %d: none may be negative", s.TimeBits, s.WorkerBits, s.SequenceBits)
	}
	l := snowflake.Layout{
		TimeBits:     uint(s.TimeBits),
		WorkerBits:   uint(s.WorkerBits),
		SequenceBits: uint(s.SequenceBits),
		Unit:         s.TimeUnit.D(),
		Epoch:        epoch,
	}
	return l, l.Validate()
}

// TagLayout is the snowflake layout of tag name: its own
// (sequences.tags.<name>), or the snowflake section's.
func TagLayout(c *config.Config, name string) (snowflake.Layout, error) {
	global, err := SnowflakeLayout(c.Snowflake)
	if err != nil {
		return snowflake.Layout{}, fmt.Errorf("snowflake: %w", err)
	}
	return tagLayout(c.Sequences.Tags[name].TagLayout, global)
}

// tagLayout applies the layout keys a tag sets to global.
func tagLayout(t config.TagLayout, global snowflake.Layout) (snowflake.Layout, error) {
	l := global
	if t.Epoch != "" {
		e, err := config.Snowflake{Epoch: t.Epoch}.EpochTime()
		if err != nil {
			return l, fmt.Errorf("epoch: %w", err)
		}
		l.Epoch = e
	}
	bits := t.TimeBits != 0 || t.WorkerBits != 0 || t.SequenceBits != 0
	switch {
	case t.Layout != "" && bits:
		return l, errors.New("layout and time_bits/worker_bits/sequence_bits exclude each other: name a layout or give the bits")
	case t.Layout != "":
		named, ok := snowflake.NamedLayout(t.Layout, l.Epoch)
		if !ok {
			return l, fmt.Errorf("layout %q is not %s or %s (or give time_bits, worker_bits and sequence_bits)",
				t.Layout, snowflake.LayoutNameDefault, snowflake.LayoutNameJSSafe)
		}
		l = named
	case bits:
		if t.TimeBits <= 0 || t.WorkerBits < 0 || t.SequenceBits <= 0 {
			return l, fmt.Errorf("time_bits %d, worker_bits %d, sequence_bits %d: set all three (worker_bits may be 0)", t.TimeBits, t.WorkerBits, t.SequenceBits)
		}
		l.TimeBits, l.WorkerBits, l.SequenceBits = uint(t.TimeBits), uint(t.WorkerBits), uint(t.SequenceBits)
	}
	if t.TimeUnit != 0 {
		l.Unit = t.TimeUnit.D()
	}
	return l, l.Validate()
}

// snowflakeIdentity is snowflake.identity with auto resolved: the host
// name and the port clients connect to (two live processes cannot listen
// on one host and port), or the socket path.
func snowflakeIdentity(c *config.Config) (string, error) {
	id := c.Snowflake.Identity
	if id != "auto" {
		return id, nil
	}
	host, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("snowflake.identity: auto needs the host name: %w (give a name instead)", err)
	}
	where := c.Listen
	if _, port, err := net.SplitHostPort(c.Listen); err == nil {
		where = port
	}
	id = host + ":" + where
	if len(id) > config.MaxIdentity || strings.ContainsAny(id, "|#") {
		return "", fmt.Errorf("snowflake.identity: auto makes %q, over %d bytes or with | or #: give a name no other proxy has", id, config.MaxIdentity)
	}
	return id, nil
}
