package config

import (
	"strings"

	"github.com/go-sql-driver/mysql"
)

// What the configuration derives for the rest of the program: the rules,
// a tag's settings, the store's DSN.

// DeclareRuleTags declares in sequences.tags, with the defaults, every
// tables[].tag not declared there: for configurations built in code
// (tests) that mean "create the rules' tags", as a file says by listing
// them.
func (c *Config) DeclareRuleTags() {
	for _, t := range c.Tables {
		if _, ok := c.Sequences.Tags[t.Tag]; !ok && t.Tag != "" {
			if c.Sequences.Tags == nil {
				c.Sequences.Tags = map[string]Tag{}
			}
			c.Sequences.Tags[t.Tag] = Tag{Generator: GeneratorSegment, Step: c.Sequences.DefaultStep}
		}
	}
}

// TagSettings returns the settings for tag, with defaults for tags the file
// does not list (segment generator, default step).
func (c *Config) TagSettings(tag string) Tag {
	if t, ok := c.Sequences.Tags[tag]; ok {
		return t
	}
	return Tag{Generator: GeneratorSegment, Step: c.Sequences.DefaultStep}
}

// Network is "unix" for an address that is a Unix socket path (it holds a
// '/'), else "tcp": how listen and backend.addr are read.
func Network(addr string) string {
	if strings.Contains(addr, "/") {
		return "unix"
	}
	return "tcp"
}

// StoreDSN is the go-sql-driver DSN of the allocation store: sequences.store
// (its first entry when it lists several), or database `leafproxy` on the
// backend with the backend's account.
func (c *Config) StoreDSN() string {
	if c.Sequences.Store.Set() {
		return c.Sequences.Store.First()
	}
	mc := mysql.NewConfig()
	mc.Net = Network(c.Backend.Addr)
	mc.Addr = c.Backend.Addr
	mc.User = c.Backend.User
	mc.Passwd = c.Backend.Password
	mc.DBName = "leafproxy"
	mc.Timeout = c.Backend.ConnectTimeout.D()
	return mc.FormatDSN()
}

// StoreDSNs are the allocation store's DSNs in order of preference: every
// entry of sequences.store, or StoreDSN alone.
func (c *Config) StoreDSNs() []string {
	if c.Sequences.Store.Set() {
		return append([]string(nil), c.Sequences.Store...)
	}
	return []string{c.StoreDSN()}
}
