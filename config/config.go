// Package config is the shape of leafproxy's YAML file: decoding, the
// defaults of its fields, and the checks that need nothing but the file,
// each problem naming its key and line. It imports no other leafproxy
// package: the rules of the domain packages (a tag's name, a table rule,
// a snowflake layout's limits) are theirs, run through a Check the caller
// passes (service.CheckConfig), and each package takes its own options,
// which the service builds from a Config.
package config

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Config is the whole file. Its YAML keys are the user-facing contract:
// leafproxy.example.yaml shows every one (a test keeps it so).
type Config struct {
	Listen string `yaml:"listen"`
	// EventLoops is how many event loops serve logged-in sessions on
	// plain (not TLS, not compressed) sockets: 0 one per CPU the process
	// uses (GOMAXPROCS), -1 none: every session on a goroutine of its own.
	EventLoops int     `yaml:"event_loops"`
	Backend    Backend `yaml:"backend"`
	// Users are the proxy's own accounts. None (the default):
	// backend-account mode, where any account the backend accepts logs
	// in with its own privileges and the proxy holds no password.
	Users []User `yaml:"users"`
	// Admins are the backend accounts (user names) that may run the admin
	// SQL and KILL other accounts' sessions in backend-account mode. With
	// users configured, users[].admin says it instead.
	Admins []string `yaml:"admins"`
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
	IDAPI      IDAPI     `yaml:"id_api"`
	// Path is the file the configuration came from ("" for defaults).
	Path string `yaml:"-"`

	secretsResolved bool         // ResolveSecrets ran
	inlineSecrets   []string     // keys of passwords written in the file
	secretFiles     []secretFile // password files read
}

// Backend is the MySQL/MariaDB server the proxy relays to.
type Backend struct {
	Addr     string `yaml:"addr"`
	User     string `yaml:"user"`
	Password string `yaml:"password"`
	// PasswordEnv and PasswordFile give the password from an environment
	// variable or a file instead (config.ResolveSecrets).
	PasswordEnv    string    `yaml:"password_env"`
	PasswordFile   string    `yaml:"password_file"`
	ConnectTimeout Duration  `yaml:"connect_timeout"`
	TLS            ClientTLS `yaml:"tls"`
}

// User is an account clients log in to the proxy with. The backend session
// uses BackendUser/BackendPassword, defaulting to the backend's.
type User struct {
	Name     string `yaml:"name"`
	Password string `yaml:"password"`
	// PasswordHash is the mysql_native_password hash ("*" and 40 hex
	// digits, SELECT PASSWORD('...')) instead of Password.
	PasswordHash        string `yaml:"password_hash"`
	BackendUser         string `yaml:"backend_user"`
	BackendPassword     string `yaml:"backend_password"`
	BackendPasswordEnv  string `yaml:"backend_password_env"`
	BackendPasswordFile string `yaml:"backend_password_file"`
	// Admin may KILL other accounts' sessions through the proxy (and, as
	// the admin SQL grows, steer sequences).
	Admin bool `yaml:"admin"`
}

// Sequences configures the ID allocators.
type Sequences struct {
	// Store is the DSN (go-sql-driver form) of the database holding
	// leaf_alloc and the worker-lease table, or a list of them (the
	// nodes of a replicated store, in order of preference); empty means
	// the backend.
	Store StoreList `yaml:"store"`
	// StorePasswordEnv / StorePasswordFile give the password of the
	// account in Store from an environment variable or a file.
	StorePasswordEnv  string         `yaml:"store_password_env"`
	StorePasswordFile string         `yaml:"store_password_file"`
	AutoCreate        bool           `yaml:"auto_create"`
	DefaultStep       int64          `yaml:"default_step"`
	WaitTimeout       Duration       `yaml:"wait_timeout"`
	MaxLoaders        int            `yaml:"max_loaders"`
	Tags              map[string]Tag `yaml:"tags"`
	// RepairMargin: how far past the highest value it knew a proxy pushes
	// leaf_alloc.max_id after finding it moved back; 0 = 10,000,000.
	RepairMargin int64 `yaml:"repair_margin"`
}

// Tag is per-tag settings.
type Tag struct {
	Generator string           `yaml:"generator"` // segment (default) or snowflake
	Step      int64            `yaml:"step"`      // initial step for init/auto-create; 0 = default_step
	TagLayout `yaml:",inline"` // snowflake tags: their own layout (config/snowflake.go)
}

// Table is one transparent key-filling rule.
type Table struct {
	// Table is table or db.table; either part may be a shell-style
	// pattern (shop_*.orders_*, orders_?, [0-9], \ quotes) that gives a
	// whole family of tables the rule's column and tag. Exact names win
	// over patterns, db.table over table; among patterns the first
	// listed. Case is compared as the backend's lower_case_table_names
	// says (see rewriter.Rules).
	Table  string `yaml:"table"`
	Column string `yaml:"column"`
	Tag    string `yaml:"tag"`
	// Exclude (a pattern only): tables the pattern leaves alone, each
	// table or db.table, exact or a pattern.
	Exclude []string `yaml:"exclude"`
	// PerTable (a pattern only): each table the pattern fills has a tag
	// of its own, <tag>.<db>.<table> (a counter per table, as
	// AUTO_INCREMENT), created on first use above the table's largest
	// key; without it the whole family shares tag.
	PerTable bool `yaml:"per_table"`
	// Zero is what an explicit key 0 means: "fill" (AUTO_INCREMENT's
	// meaning: a generated key), "keep" (stored as 0), "" (the default:
	// keep on a table a pattern matched whose key column has no
	// AUTO_INCREMENT, fill otherwise).
	Zero string `yaml:"zero"`
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

// Metrics is the optional Prometheus endpoint.
type Metrics struct {
	// Listen is the host:port serving /metrics; empty (the default) means
	// no endpoint.
	Listen string `yaml:"listen"`
}

// IDAPI is the optional HTTP ID service: Leaf's /api/segment/get/{tag} and
// /api/snowflake/get/{tag}, and leafproxy's own /api/decode/{tag}/{id}
// (with LeafDecodeTag, also Leaf's /decodeSnowflakeId).
type IDAPI struct {
	// Listen is the host:port it serves on; empty (the default) means off.
	Listen string `yaml:"listen"`
	// Tokens are the bearer tokens callers send, each with its tags.
	Tokens []APIToken `yaml:"tokens"`
	// The port's own budget (idapi.Limits): open connections in all and
	// per client address, how long a request's headers may take to
	// arrive, how long a keep-alive connection may idle, how long an
	// answer may take to be written, the largest headers.
	MaxConnections        int      `yaml:"max_connections"`
	MaxConnectionsPerHost int      `yaml:"max_connections_per_host"`
	HeaderTimeout         Duration `yaml:"header_timeout"`
	IdleTimeout           Duration `yaml:"idle_timeout"`
	WriteTimeout          Duration `yaml:"write_timeout"`
	MaxHeaderBytes        ByteSize `yaml:"max_header_bytes"`
	// LeafErrors answers the get endpoints' errors as a Leaf server does
	// (HTTP 500, Spring Boot's JSON body), for clients written for Leaf.
	LeafErrors bool `yaml:"leaf_errors"`
	// LeafDecodeTag, when set, serves Leaf's /decodeSnowflakeId under
	// that snowflake tag's layout.
	LeafDecodeTag string `yaml:"leaf_decode_tag"`
}

// APIToken is one caller of the ID API: a name (the audit log's), its
// token given as token, token_env or token_file (as passwords are), and
// the tags it may use ("*": every tag).
type APIToken struct {
	Name      string   `yaml:"name"`
	Token     string   `yaml:"token"`
	TokenEnv  string   `yaml:"token_env"`
	TokenFile string   `yaml:"token_file"`
	Tags      []string `yaml:"tags"`
	// Rate is the requests a second the token may make (a block counts
	// once), with bursts of as many; more get 429.
	Rate int `yaml:"rate"`
	// MaxNewTags is how many tags the token may bring into being through
	// sequences.auto_create (tags neither configured, in the store nor
	// named in its tags) while the process runs; nil: the default.
	MaxNewTags *int `yaml:"max_new_tags"`
}

// MinTokenLength is the shortest id_api token accepted.
const MinTokenLength = 16

// A Check is a validation the config package cannot make itself because a
// domain package owns the rule (service.DomainRules runs them all). It
// reports each problem with its key; Parse adds the line.
type Check func(*Config) []Problem

// Load reads, defaults and validates the file at path, running checks
// after the package's own.
func Load(path string, checks ...Check) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	c, err := Parse(b, checks...)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	c.Path = path
	return c, nil
}

// Parse decodes YAML, applies defaults and validates. Every problem is
// reported at once, each with its line and the key to fix: syntax errors at
// the line the parser could not take, unknown keys (a typo must not
// silently disable a rule) at any level with a suggestion, values of the
// wrong type, and what Validate and checks find.
func Parse(b []byte, checks ...Check) (*Config, error) {
	c := &Config{}
	root, err := parseNode(b)
	if err != nil {
		return nil, err
	}
	// The file's own problems (unknown keys, values of the wrong type)
	// and what validation finds in the rest are reported together: one
	// run of check names every problem. A key whose value did not decode
	// is not validated again.
	var fileProbs []Problem
	if len(root.Content) > 0 {
		fileProbs = checkKeys(root)
		if err := root.Decode(c); err != nil {
			for _, p := range decodeProblems(err) {
				if p.Key == "" {
					p.Key = keyAtLine(root, p.Line)
				}
				fileProbs = append(fileProbs, p)
			}
		}
	}
	badKeys := map[string]bool{}
	for _, p := range fileProbs {
		badKeys[p.Key] = true
	}
	c.ApplyDefaults()
	probs := c.ResolveSecrets()
	if err := c.Validate(checks...); err != nil {
		var ce *Error
		if errors.As(err, &ce) {
			probs = append(probs, ce.Problems...)
		}
	}
	probs = slices.DeleteFunc(probs, func(p Problem) bool { return badKeys[p.Key] })
	for i, p := range probs {
		probs[i].Line = lineOf(root, p.Key)
	}
	probs = append(fileProbs, probs...)
	if len(probs) > 0 {
		sort.SliceStable(probs, func(i, j int) bool { return probs[i].Line < probs[j].Line })
		return nil, &Error{Problems: probs}
	}
	return c, nil
}

// Default returns a configuration with every default applied and no file.
func Default() *Config {
	c := &Config{}
	c.ApplyDefaults()
	return c
}

// Defaults of the file's fields. They are the domain packages' own
// defaults written as values (config imports none of them); a test in
// service keeps the two equal.
const (
	DefaultListen               = "127.0.0.1:3307"
	DefaultAuthMethod           = "mysql_native_password"
	DefaultBackendAddr          = "127.0.0.1:3306"
	DefaultBackendUser          = "root"
	DefaultConnectTimeout       = 5 * time.Second
	DefaultStep                 = 1000
	DefaultWaitTimeout          = 2 * time.Second
	DefaultMaxLoaders           = 4
	DefaultSnowflakeEpoch       = "2020-01-01T00:00:00Z"
	DefaultTimeBits             = 41
	DefaultWorkerBits           = 10
	DefaultSequenceBits         = 12
	DefaultTimeUnit             = time.Millisecond
	DefaultRandomStart          = 100
	DefaultMaxBackward          = 5 * time.Second
	DefaultLeaseTTL             = 30 * time.Second
	DefaultShutdownGrace        = 10 * time.Second
	DefaultMaxConnections       = 4096
	DefaultMaxHandshakes        = 1024
	DefaultMaxSilentHandshakes  = 16384
	DefaultHandshakeTimeout     = 5 * time.Second
	DefaultCommandMemory        = 512 << 20
	DefaultLoginFailures        = 10
	DefaultLoginFailureInterval = 6 * time.Second
	DefaultLoginBlockMax        = 5 * time.Minute
	DefaultMaxPlanDepth         = 1000
	DefaultPlanMemory           = 256 << 20
	// DefaultPreparedMemory and DefaultSessionPreparedMemory are
	// engine.DefaultPreparedMemory and engine.DefaultSessionPreparedMemory.
	DefaultPreparedMemory        = 256 << 20
	DefaultSessionPreparedMemory = 8 << 20
	// The id_api defaults are idapi's (DefaultMaxConnections, ...).
	DefaultAPIMaxConnections        = 1024
	DefaultAPIMaxConnectionsPerHost = 128
	DefaultAPIHeaderTimeout         = 5 * time.Second
	DefaultAPIIdleTimeout           = 30 * time.Second
	DefaultAPIWriteTimeout          = 30 * time.Second
	DefaultAPIMaxHeaderBytes        = 16 << 10
	DefaultAPITokenRate             = 5000
	DefaultAPIMaxNewTags            = 16
)

// Generators a tag can name.
const (
	GeneratorSegment   = "segment"
	GeneratorSnowflake = "snowflake"
)

// ApplyDefaults fills every unset field with its documented default.
func (c *Config) ApplyDefaults() {
	setDefault(&c.Listen, DefaultListen)
	setDefault(&c.AuthMethod, DefaultAuthMethod)
	setDefault(&c.Backend.Addr, DefaultBackendAddr)
	setDefault(&c.Backend.User, DefaultBackendUser)
	setDefault(&c.Backend.ConnectTimeout, Duration(DefaultConnectTimeout))
	setDefault(&c.Sequences.DefaultStep, DefaultStep)
	setDefault(&c.Sequences.WaitTimeout, Duration(DefaultWaitTimeout))
	setDefault(&c.Sequences.MaxLoaders, DefaultMaxLoaders)
	setDefault(&c.Snowflake.Epoch, DefaultSnowflakeEpoch)
	setDefault(&c.Snowflake.WorkerID, "auto")
	if c.Snowflake.TimeBits == 0 && c.Snowflake.WorkerBits == 0 && c.Snowflake.SequenceBits == 0 {
		c.Snowflake.TimeBits, c.Snowflake.WorkerBits, c.Snowflake.SequenceBits = DefaultTimeBits, DefaultWorkerBits, DefaultSequenceBits
	}
	setDefault(&c.Snowflake.TimeUnit, Duration(DefaultTimeUnit))
	if c.Snowflake.RandomStart == nil {
		v := DefaultRandomStart
		c.Snowflake.RandomStart = &v
	}
	setDefault(&c.Snowflake.MaxBackward, Duration(DefaultMaxBackward))
	setDefault(&c.Snowflake.LeaseTTL, Duration(DefaultLeaseTTL))
	setDefault(&c.Shutdown.Grace, Duration(DefaultShutdownGrace))
	setDefault(&c.Log.Level, "info")
	setDefault(&c.Log.Format, "text")
	setDefault(&c.Limits.MaxConnections, DefaultMaxConnections)
	setDefault(&c.Limits.MaxHandshakes, DefaultMaxHandshakes)
	setDefault(&c.Limits.MaxSilentHandshakes, DefaultMaxSilentHandshakes)
	setDefault(&c.Limits.HandshakeTimeout, Duration(DefaultHandshakeTimeout))
	setDefault(&c.Limits.CommandMemory, DefaultCommandMemory)
	setDefault(&c.Limits.LoginFailures, DefaultLoginFailures)
	setDefault(&c.Limits.LoginFailureInterval, Duration(DefaultLoginFailureInterval))
	setDefault(&c.Limits.LoginBlockMax, Duration(DefaultLoginBlockMax))
	setDefault(&c.Limits.MaxPlanDepth, DefaultMaxPlanDepth)
	setDefault(&c.Limits.PlanMemory, DefaultPlanMemory)
	setDefault(&c.Limits.PreparedMemory, DefaultPreparedMemory)
	setDefault(&c.Limits.SessionPreparedMemory, DefaultSessionPreparedMemory)
	c.IDAPI.applyDefaults()
	for name, t := range c.Sequences.Tags {
		setDefault(&t.Generator, GeneratorSegment)
		setDefault(&t.Step, c.Sequences.DefaultStep)
		c.Sequences.Tags[name] = t
	}
}

// setDefault sets *field to value when it holds its type's zero value.
func setDefault[T comparable](field *T, value T) {
	var zero T
	if *field == zero {
		*field = value
	}
}

// Validate reports every problem at once, each naming the key to fix: the
// package's own checks, then checks. The error is an *Error; Parse adds
// the lines.
func (c *Config) Validate(checks ...Check) error {
	var probs []Problem
	add := func(key, format string, a ...any) {
		probs = append(probs, Problem{Key: key, Msg: fmt.Sprintf(format, a...)})
	}
	// The sections in the order their problems are reported.
	c.validateFront(add)
	c.validateUsers(add)
	c.validateLimits(add)
	c.validateStore(add)
	c.validateSequences(add)
	c.validateSnowflake(add)
	c.validateOutput(add)
	c.validateIDAPI(add)
	c.validatePlanLimits(add)
	for _, check := range checks {
		probs = append(probs, check(c)...)
	}
	if len(probs) > 0 {
		return &Error{Problems: probs}
	}
	return nil
}

// validateFront checks the addresses (listen, backend.addr), event_loops
// and auth_method.
func (c *Config) validateFront(add func(key, format string, a ...any)) {
	// A value with a '/' is a Unix socket path (same-host deployments).
	if _, _, err := net.SplitHostPort(c.Listen); err != nil && !strings.Contains(c.Listen, "/") {
		add("listen", "%q is neither host:port nor a Unix socket path", c.Listen)
	}
	if _, _, err := net.SplitHostPort(c.Backend.Addr); err != nil && !strings.Contains(c.Backend.Addr, "/") {
		add("backend.addr", "%q is neither host:port nor a Unix socket path", c.Backend.Addr)
	}
	if c.EventLoops < -1 || c.EventLoops > 1024 {
		add("event_loops", "%d is outside -1..1024 (0: one per CPU, -1: none)", c.EventLoops)
	}
	if c.AuthMethod != "mysql_native_password" && c.AuthMethod != "caching_sha2_password" {
		add("auth_method", "%q is not mysql_native_password or caching_sha2_password", c.AuthMethod)
	}
}

// validateUsers checks users (named, once each, hashes that parse) and
// admins (only without users, none empty).
func (c *Config) validateUsers(add func(key, format string, a ...any)) {
	seen := map[string]bool{}
	for i, u := range c.Users {
		if u.Name == "" {
			add(fmt.Sprintf("users[%d].name", i), "empty")
		}
		if seen[u.Name] {
			add(fmt.Sprintf("users[%d].name", i), "%q listed twice", u.Name)
		}
		seen[u.Name] = true
		if u.PasswordHash != "" {
			if _, err := ParsePasswordHash(u.PasswordHash); err != nil {
				add(fmt.Sprintf("users[%d].password_hash", i), "%v", err)
			}
		}
	}
	if len(c.Admins) > 0 && len(c.Users) > 0 {
		add("admins", "applies only without users (backend-account mode); with users, mark users[].admin: true")
	}
	for i, a := range c.Admins {
		if a == "" {
			add(fmt.Sprintf("admins[%d]", i), "empty")
		}
	}
}

// validateSequences checks the sequences section and its tags, and the
// tables' tags one typo away from a declared one.
func (c *Config) validateSequences(add func(key, format string, a ...any)) {
	if c.Sequences.DefaultStep < 1 || c.Sequences.DefaultStep > 1_000_000 {
		add("sequences.default_step", "%d is outside 1..1000000", c.Sequences.DefaultStep)
	}
	if c.Sequences.WaitTimeout.D() < 0 {
		add("sequences.wait_timeout", "negative")
	}
	if c.Sequences.RepairMargin < 0 {
		add("sequences.repair_margin", "negative")
	}
	if c.Sequences.MaxLoaders < 1 {
		add("sequences.max_loaders", "must be at least 1")
	}
	for _, name := range slices.Sorted(maps.Keys(c.Sequences.Tags)) {
		t := c.Sequences.Tags[name]
		if t.Generator != GeneratorSegment && t.Generator != GeneratorSnowflake {
			add("sequences.tags."+name+".generator", "%q is not segment or snowflake", t.Generator)
		}
		if t.Step < 1 || t.Step > 1_000_000 {
			add("sequences.tags."+name+".step", "%d is outside 1..1000000", t.Step)
		}
	}
	declared := slices.Sorted(maps.Keys(c.Sequences.Tags))
	for i, t := range c.Tables {
		if t.Tag == "" {
			continue
		}
		// A name one typo away from a declared tag is a typo: a new tag
		// must be declared under its own name.
		if _, ok := c.Sequences.Tags[t.Tag]; !ok {
			if near := suggest(t.Tag, declared); near != "" {
				add(fmt.Sprintf("tables[%d].tag", i), "%q is not declared in sequences.tags (did you mean %q?); a new tag must be declared there (sequences: {tags: {%s: {}}})", t.Tag, near, t.Tag)
			}
		}
	}
}

// validateSnowflake checks the snowflake section: epoch, worker_id and
// identity.
func (c *Config) validateSnowflake(add func(key, format string, a ...any)) {
	if _, err := c.Snowflake.EpochTime(); err != nil {
		add("snowflake.epoch", "%v", err)
	}
	if c.Snowflake.WorkerID != "auto" {
		if _, err := strconv.ParseUint(c.Snowflake.WorkerID, 10, 32); err != nil {
			add("snowflake.worker_id", "%q is not a number or auto", c.Snowflake.WorkerID)
		}
	}
	c.Snowflake.validateIdentity(add)
}

// validateOutput checks tls (cert and key together), log (level, format)
// and metrics.listen.
func (c *Config) validateOutput(add func(key, format string, a ...any)) {
	if (c.TLS.Cert == "") != (c.TLS.Key == "") {
		add("tls", "cert and key must be set together")
	}
	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		add("log.level", "%q is not debug, info, warn or error", c.Log.Level)
	}
	switch c.Log.Format {
	case "text", "json":
	default:
		add("log.format", "%q is not text or json", c.Log.Format)
	}
	if c.Metrics.Listen != "" {
		if _, _, err := net.SplitHostPort(c.Metrics.Listen); err != nil {
			add("metrics.listen", "%q is not host:port (empty disables the endpoint)", c.Metrics.Listen)
		}
	}
}

// validatePlanLimits checks the limits on planning and prepared
// statements' memory.
func (c *Config) validatePlanLimits(add func(key, format string, a ...any)) {
	if c.Limits.MaxPlanDepth < 1 {
		add("limits.max_plan_depth", "%d: must be at least 1 (default %d)", c.Limits.MaxPlanDepth, DefaultMaxPlanDepth)
	}
	if c.Limits.PlanMemory < 1<<20 {
		add("limits.plan_memory", "%d bytes: must be at least 1MiB (default %dMiB), or every statement the proxy parses is refused",
			c.Limits.PlanMemory, DefaultPlanMemory>>20)
	}
	if c.Limits.SessionPreparedMemory < 64<<10 {
		add("limits.session_prepared_memory", "%d bytes: must be at least 64KiB (default %dMiB)", c.Limits.SessionPreparedMemory, DefaultSessionPreparedMemory>>20)
	}
	if c.Limits.PreparedMemory < c.Limits.SessionPreparedMemory {
		add("limits.prepared_memory", "%d bytes: must be at least limits.session_prepared_memory (%d)", c.Limits.PreparedMemory, c.Limits.SessionPreparedMemory)
	}
}
