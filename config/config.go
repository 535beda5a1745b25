// Package config is leafproxy's one typed configuration: loaded once from a
// YAML file, defaults applied, validated with errors a person can act on.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"gopkg.in/yaml.v3"
)

// Config is the whole file. Field names match DESIGN.md's contract.
type Config struct {
	Listen  string  `yaml:"listen"`
	Backend Backend `yaml:"backend"`
	Users   []User  `yaml:"users"`
	// AuthMethod is the plugin the proxy offers clients first:
	// mysql_native_password (default) or caching_sha2_password. Clients
	// that ask for the other are switched, so both work either way.
	AuthMethod string    `yaml:"auth_method"`
	Sequences  Sequences `yaml:"sequences"`
	Tables     []Table   `yaml:"tables"`
	Snowflake  Snowflake `yaml:"snowflake"`
	TLS        ServerTLS `yaml:"tls"`
	Shutdown   Shutdown  `yaml:"shutdown"`
	Log        Log       `yaml:"log"`
	Limits     Limits    `yaml:"limits"`
	Metrics    Metrics   `yaml:"metrics"`
	// Path is the file the configuration came from ("" for defaults).
	Path string `yaml:"-"`
}

// Backend is the MySQL/MariaDB server the proxy relays to.
type Backend struct {
	Addr           string    `yaml:"addr"`
	User           string    `yaml:"user"`
	Password       string    `yaml:"password"`
	ConnectTimeout Duration  `yaml:"connect_timeout"`
	TLS            ClientTLS `yaml:"tls"`
}

// User is an account clients log in to the proxy with. The backend session
// uses BackendUser/BackendPassword, defaulting to the backend's.
type User struct {
	Name            string `yaml:"name"`
	Password        string `yaml:"password"`
	BackendUser     string `yaml:"backend_user"`
	BackendPassword string `yaml:"backend_password"`
}

// Sequences configures the ID allocators.
type Sequences struct {
	// Store is the DSN (go-sql-driver form) of the database holding
	// leaf_alloc and the worker-lease table; empty means the backend.
	Store       string         `yaml:"store"`
	AutoCreate  bool           `yaml:"auto_create"`
	DefaultStep int64          `yaml:"default_step"`
	WaitTimeout Duration       `yaml:"wait_timeout"`
	MaxLoaders  int            `yaml:"max_loaders"`
	Tags        map[string]Tag `yaml:"tags"`
}

// Tag is per-tag settings.
type Tag struct {
	Generator string `yaml:"generator"` // segment (default) or snowflake
	Step      int64  `yaml:"step"`      // initial step for init/auto-create; 0 = default_step
}

// Table is one transparent key-filling rule.
type Table struct {
	Table  string `yaml:"table"` // table or db.table
	Column string `yaml:"column"`
	Tag    string `yaml:"tag"`
}

// Snowflake configures the snowflake generator.
type Snowflake struct {
	Epoch        string   `yaml:"epoch"`
	WorkerID     string   `yaml:"worker_id"` // a number, or "auto" to lease one from the store
	TimeBits     int      `yaml:"time_bits"`
	WorkerBits   int      `yaml:"worker_bits"`
	SequenceBits int      `yaml:"sequence_bits"`
	TimeUnit     Duration `yaml:"time_unit"`
	RandomStart  *int     `yaml:"random_start"` // each tick's sequence starts in [0, random_start)
	MaxBackward  Duration `yaml:"max_backward"` // longest wait when the clock is behind
	LeaseTTL     Duration `yaml:"lease_ttl"`
	StateFile    string   `yaml:"state_file"` // remembers worker id and last timestamp
}

// ServerTLS is TLS towards clients.
type ServerTLS struct {
	Cert     string `yaml:"cert"`
	Key      string `yaml:"key"`
	Required bool   `yaml:"required"`
}

// ClientTLS is TLS towards the backend.
type ClientTLS struct {
	Enabled            bool   `yaml:"enabled"`
	CA                 string `yaml:"ca"`
	ServerName         string `yaml:"server_name"`
	InsecureSkipVerify bool   `yaml:"insecure_skip_verify"`
}

// Shutdown bounds how long in-flight statements get on SIGTERM.
type Shutdown struct {
	Grace Duration `yaml:"grace"`
}

// Log selects the slog handler.
type Log struct {
	Level  string `yaml:"level"`  // debug, info, warn, error
	Format string `yaml:"format"` // text or json
}

// Limits protects the proxy.
type Limits struct {
	MaxConnections int      `yaml:"max_connections"`
	IdleTimeout    Duration `yaml:"idle_timeout"`
}

// Metrics is the optional Prometheus endpoint.
type Metrics struct {
	// Listen is the host:port serving /metrics; empty (the default) means
	// no endpoint.
	Listen string `yaml:"listen"`
}

// Duration is a time.Duration written as "2s" in YAML.
type Duration time.Duration

func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %q is not a duration (use e.g. 500ms, 2s, 1m)", n.Line, n.Value)
	}
	*d = Duration(v)
	return nil
}

func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// Load reads, defaults and validates the file at path.
func Load(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	c, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	c.Path = path
	return c, nil
}

// Parse decodes YAML (unknown keys are errors: a typo must not silently
// disable a rule), applies defaults and validates.
func Parse(b []byte) (*Config, error) {
	c := &Config{}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	c.ApplyDefaults()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// Default returns a configuration with every default applied and no file.
func Default() *Config {
	c := &Config{}
	c.ApplyDefaults()
	return c
}

// ApplyDefaults fills every unset field with its documented default.
func (c *Config) ApplyDefaults() {
	if c.Listen == "" {
		c.Listen = "127.0.0.1:3307"
	}
	if c.AuthMethod == "" {
		c.AuthMethod = "mysql_native_password"
	}
	if c.Backend.Addr == "" {
		c.Backend.Addr = "127.0.0.1:3306"
	}
	if c.Backend.User == "" {
		c.Backend.User = "root"
	}
	if c.Backend.ConnectTimeout == 0 {
		c.Backend.ConnectTimeout = Duration(5 * time.Second)
	}
	if c.Sequences.DefaultStep == 0 {
		c.Sequences.DefaultStep = 1000
	}
	if c.Sequences.WaitTimeout == 0 {
		c.Sequences.WaitTimeout = Duration(2 * time.Second)
	}
	if c.Sequences.MaxLoaders == 0 {
		c.Sequences.MaxLoaders = 4
	}
	if c.Snowflake.Epoch == "" {
		c.Snowflake.Epoch = "2020-01-01T00:00:00Z"
	}
	if c.Snowflake.WorkerID == "" {
		c.Snowflake.WorkerID = "auto"
	}
	if c.Snowflake.TimeBits == 0 && c.Snowflake.WorkerBits == 0 && c.Snowflake.SequenceBits == 0 {
		c.Snowflake.TimeBits, c.Snowflake.WorkerBits, c.Snowflake.SequenceBits = 41, 10, 12
	}
	if c.Snowflake.TimeUnit == 0 {
		c.Snowflake.TimeUnit = Duration(time.Millisecond)
	}
	if c.Snowflake.RandomStart == nil {
		v := 100
		c.Snowflake.RandomStart = &v
	}
	if c.Snowflake.MaxBackward == 0 {
		c.Snowflake.MaxBackward = Duration(5 * time.Second)
	}
	if c.Snowflake.LeaseTTL == 0 {
		c.Snowflake.LeaseTTL = Duration(30 * time.Second)
	}
	if c.Shutdown.Grace == 0 {
		c.Shutdown.Grace = Duration(10 * time.Second)
	}
	if c.Log.Level == "" {
		c.Log.Level = "info"
	}
	if c.Log.Format == "" {
		c.Log.Format = "text"
	}
	if c.Limits.MaxConnections == 0 {
		c.Limits.MaxConnections = 4096
	}
	for name, t := range c.Sequences.Tags {
		if t.Generator == "" {
			t.Generator = "segment"
		}
		if t.Step == 0 {
			t.Step = c.Sequences.DefaultStep
		}
		c.Sequences.Tags[name] = t
	}
}

// Validate reports every problem at once, each naming the key to fix.
func (c *Config) Validate() error {
	var errs []string
	add := func(format string, a ...any) { errs = append(errs, fmt.Sprintf(format, a...)) }

	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		add("listen: %q is not host:port", c.Listen)
	}
	if _, _, err := net.SplitHostPort(c.Backend.Addr); err != nil {
		add("backend.addr: %q is not host:port", c.Backend.Addr)
	}
	if c.AuthMethod != "mysql_native_password" && c.AuthMethod != "caching_sha2_password" {
		add("auth_method: %q is not mysql_native_password or caching_sha2_password", c.AuthMethod)
	}
	seen := map[string]bool{}
	for i, u := range c.Users {
		if u.Name == "" {
			add("users[%d].name: empty", i)
		}
		if seen[u.Name] {
			add("users[%d].name: %q listed twice", i, u.Name)
		}
		seen[u.Name] = true
	}
	if c.Sequences.DefaultStep < 1 || c.Sequences.DefaultStep > 1_000_000 {
		add("sequences.default_step: %d is outside 1..1000000", c.Sequences.DefaultStep)
	}
	if c.Sequences.WaitTimeout.D() < 0 {
		add("sequences.wait_timeout: negative")
	}
	if c.Sequences.MaxLoaders < 1 {
		add("sequences.max_loaders: must be at least 1")
	}
	for name, t := range c.Sequences.Tags {
		if name == "" || len(name) > 128 {
			add("sequences.tags: tag name %q must be 1..128 characters (leaf_alloc.biz_tag)", name)
		}
		if t.Generator != "segment" && t.Generator != "snowflake" {
			add("sequences.tags.%s.generator: %q is not segment or snowflake", name, t.Generator)
		}
		if t.Step < 1 || t.Step > 1_000_000 {
			add("sequences.tags.%s.step: %d is outside 1..1000000", name, t.Step)
		}
	}
	rules := map[string]bool{}
	for i, t := range c.Tables {
		if t.Table == "" || strings.Count(t.Table, ".") > 1 {
			add("tables[%d].table: %q must be table or db.table", i, t.Table)
		}
		if t.Column == "" {
			add("tables[%d].column: empty (the key column to fill)", i)
		}
		if t.Tag == "" {
			add("tables[%d].tag: empty (the sequence tag that generates %s)", i, t.Table)
		}
		key := strings.ToLower(t.Table)
		if rules[key] {
			add("tables[%d].table: %q has two rules", i, t.Table)
		}
		rules[key] = true
	}
	if _, err := c.Snowflake.EpochTime(); err != nil {
		add("snowflake.epoch: %v", err)
	}
	if c.Snowflake.WorkerID != "auto" {
		if _, err := strconv.ParseUint(c.Snowflake.WorkerID, 10, 32); err != nil {
			add("snowflake.worker_id: %q is not a number or auto", c.Snowflake.WorkerID)
		}
	}
	if s := c.Snowflake; 1+s.TimeBits+s.WorkerBits+s.SequenceBits > 64 || s.TimeBits < 1 || s.WorkerBits < 0 || s.SequenceBits < 1 {
		add("snowflake: time_bits+worker_bits+sequence_bits = %d must be at most 63 (IDs stay positive), each positive",
			s.TimeBits+s.WorkerBits+s.SequenceBits)
	}
	if (c.TLS.Cert == "") != (c.TLS.Key == "") {
		add("tls: cert and key must be set together")
	}
	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		add("log.level: %q is not debug, info, warn or error", c.Log.Level)
	}
	switch c.Log.Format {
	case "text", "json":
	default:
		add("log.format: %q is not text or json", c.Log.Format)
	}
	if c.Metrics.Listen != "" {
		if _, _, err := net.SplitHostPort(c.Metrics.Listen); err != nil {
			add("metrics.listen: %q is not host:port (empty disables the endpoint)", c.Metrics.Listen)
		}
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// EpochTime parses snowflake.epoch (RFC 3339).
func (s Snowflake) EpochTime() (time.Time, error) {
	t, err := time.Parse(time.RFC3339, s.Epoch)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not an RFC 3339 time like 2020-01-01T00:00:00Z", s.Epoch)
	}
	return t, nil
}

// TagSettings returns the settings for tag, with defaults for tags the file
// does not list (segment generator, default step).
func (c *Config) TagSettings(tag string) Tag {
	if t, ok := c.Sequences.Tags[tag]; ok {
		return t
	}
	return Tag{Generator: "segment", Step: c.Sequences.DefaultStep}
}

// StoreDSN is the go-sql-driver DSN of the allocation store: sequences.store,
// or database `leafproxy` on the backend with the backend's account.
func (c *Config) StoreDSN() string {
	if c.Sequences.Store != "" {
		return c.Sequences.Store
	}
	mc := mysql.NewConfig()
	mc.Net = "tcp"
	mc.Addr = c.Backend.Addr
	mc.User = c.Backend.User
	mc.Passwd = c.Backend.Password
	mc.DBName = "leafproxy"
	mc.Timeout = c.Backend.ConnectTimeout.D()
	return mc.FormatDSN()
}
