package config

// Limits protects the proxy.
type Limits struct {
	// MaxConnections bounds logged-in client sessions; extra logins get 1040.
	MaxConnections int      `yaml:"max_connections"`
	IdleTimeout    Duration `yaml:"idle_timeout"`
	// MaxHandshakes bounds connections still in the handshake (not yet
	// authenticated), apart from MaxConnections: when full, the oldest
	// pending handshake is dropped, so silent connections cannot lock out
	// real clients.
	MaxHandshakes int `yaml:"max_handshakes"`
	// HandshakeTimeout is how long a client has to finish logging in.
	HandshakeTimeout Duration `yaml:"handshake_timeout"`
	// CommandMemory bounds the bytes all sessions together may hold for
	// client commands larger than 1 MiB (a big INSERT the proxy may have to
	// rewrite); a command that cannot get its share within 10 s gets 1041.
	CommandMemory ByteSize `yaml:"command_memory"`
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
}
