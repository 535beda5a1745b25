package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Limits protects the proxy.
type Limits struct {
	// MaxConnections bounds logged-in client sessions; extra logins get 1040.
	MaxConnections int      `yaml:"max_connections"`
	IdleTimeout    Duration `yaml:"idle_timeout"`
	// MaxHandshakes bounds connections still in the handshake (not yet
	// authenticated), apart from MaxConnections: when full, the oldest
	// pending handshake of the client host holding the most is dropped, so
	// silent connections from one host cannot lock out the others.
	MaxHandshakes int `yaml:"max_handshakes"`
	// MaxSilentHandshakes bounds, apart from MaxHandshakes, connections
	// greeted that have not sent a byte yet (Linux, users: mode; a socket
	// each, no goroutine, no buffers), the same way; at most half the
	// process's open-file limit.
	MaxSilentHandshakes int `yaml:"max_silent_handshakes"`
	// HandshakeTimeout is how long a client has to finish logging in.
	HandshakeTimeout Duration `yaml:"handshake_timeout"`
	// CommandMemory bounds the bytes all sessions together may hold for
	// client commands larger than 1 MiB (a big INSERT the proxy may have to
	// rewrite); a command that cannot get its share within 10 s gets 1041,
	// one larger than all of it gets 1041 at once.
	CommandMemory ByteSize `yaml:"command_memory"`
	// LoginFailures is the failed logins (wrong user or password) a
	// client host may make in a burst; then its connections are refused
	// with 1129 for LoginFailureInterval, doubling with each failure right
	// after a block, up to LoginBlockMax. A host regains one failed login
	// every LoginFailureInterval. Other hosts are not affected.
	LoginFailures        int      `yaml:"login_failures"`
	LoginFailureInterval Duration `yaml:"login_failure_interval"`
	LoginBlockMax        Duration `yaml:"login_block_max"`
	// MaxPlanDepth bounds the nesting of parentheses in a statement the
	// proxy must parse to rewrite it (NEXTVAL, an INSERT into a rule table
	// the fast path does not read); deeper ones get 1473.
	MaxPlanDepth int `yaml:"max_plan_depth"`
	// PlanMemory bounds the memory all sessions' planning may take at
	// once: rewriter.TokenCost per token of a statement the parser reads,
	// rewriter.CallCost per sequence call of a text with more than 64; a
	// statement that would need more than all of it gets 1041 at once,
	// others wait up to 10 s.
	PlanMemory ByteSize `yaml:"plan_memory"`
	// PreparedMemory bounds what all sessions' prepared statements with
	// generated keys keep of their plans (their text, a slot per
	// generated value, the parameter map) while they are open;
	// SessionPreparedMemory what one session's keep. A prepare beyond
	// either gets 1461, as beyond MariaDB's max_prepared_stmt_count.
	PreparedMemory        ByteSize `yaml:"prepared_memory"`
	SessionPreparedMemory ByteSize `yaml:"session_prepared_memory"`
}

// ByteSize is a byte count written as 512MiB, 64KB or a plain number.
type ByteSize int64

func (b *ByteSize) UnmarshalYAML(n *yaml.Node) error {
	s := strings.TrimSpace(n.Value)
	mult := int64(1)
	for _, u := range []struct {
		suf string
		m   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"B", 1}} {
		if strings.HasSuffix(s, u.suf) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suf)), u.m
			break
		}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 {
		return fmt.Errorf("line %d: %q is not a byte size (e.g. 512MiB)", n.Line, n.Value)
	}
	if v > math.MaxInt64/mult {
		return fmt.Errorf("line %d: %q is too large (at most 8EiB)", n.Line, n.Value)
	}
	*b = ByteSize(v * mult)
	return nil
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

// validateLimits refuses negative limits and timeouts: none of them has a
// meaning below zero (0 takes the default).
func (c *Config) validateLimits(add func(key, format string, a ...any)) {
	for _, d := range []struct {
		key string
		v   Duration
	}{
		{"backend.connect_timeout", c.Backend.ConnectTimeout},
		{"limits.idle_timeout", c.Limits.IdleTimeout},
		{"limits.handshake_timeout", c.Limits.HandshakeTimeout},
		{"limits.login_failure_interval", c.Limits.LoginFailureInterval},
		{"limits.login_block_max", c.Limits.LoginBlockMax},
		{"shutdown.grace", c.Shutdown.Grace},
		{"snowflake.max_backward", c.Snowflake.MaxBackward},
		{"snowflake.lease_ttl", c.Snowflake.LeaseTTL},
	} {
		if d.v < 0 {
			add(d.key, "%s is negative", d.v.D())
		}
	}
	for _, n := range []struct {
		key string
		v   int64
		def string
	}{
		{"limits.max_connections", int64(c.Limits.MaxConnections), "4096"},
		{"limits.max_handshakes", int64(c.Limits.MaxHandshakes), "1024"},
		{"limits.max_silent_handshakes", int64(c.Limits.MaxSilentHandshakes), "16384"},
		{"limits.command_memory", int64(c.Limits.CommandMemory), "512MiB"},
		{"limits.login_failures", int64(c.Limits.LoginFailures), "10"},
	} {
		if n.v < 0 {
			add(n.key, "%d is negative: give a number (0 takes the default, %s; there is no unlimited)", n.v, n.def)
		}
	}
	if c.Limits.LoginBlockMax > 0 && c.Limits.LoginFailureInterval > c.Limits.LoginBlockMax {
		add("limits.login_block_max", "%s is shorter than limits.login_failure_interval (%s), the first block", c.Limits.LoginBlockMax.D(), c.Limits.LoginFailureInterval.D())
	}
}
