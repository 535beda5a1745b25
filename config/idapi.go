package config

import (
	"fmt"
	"maps"
	"net"
	"slices"
)

func (a *IDAPI) applyDefaults() {
	setDefault(&a.MaxConnections, DefaultAPIMaxConnections)
	setDefault(&a.MaxConnectionsPerHost, DefaultAPIMaxConnectionsPerHost)
	setDefault(&a.HeaderTimeout, Duration(DefaultAPIHeaderTimeout))
	setDefault(&a.IdleTimeout, Duration(DefaultAPIIdleTimeout))
	setDefault(&a.WriteTimeout, Duration(DefaultAPIWriteTimeout))
	setDefault(&a.MaxHeaderBytes, DefaultAPIMaxHeaderBytes)
	for i := range a.Tokens {
		t := &a.Tokens[i]
		setDefault(&t.Rate, DefaultAPITokenRate)
		if t.MaxNewTags == nil {
			v := DefaultAPIMaxNewTags
			t.MaxNewTags = &v
		}
	}
}

// validateIDAPI checks the id_api section: an address, and tokens each
// with a name, a token of at least MinTokenLength characters and tags,
// when the API is on.
func (c *Config) validateIDAPI(add func(key, format string, a ...any)) {
	a := &c.IDAPI
	if a.Listen == "" {
		return // off: the tokens are not used
	}
	if _, _, err := net.SplitHostPort(a.Listen); err != nil {
		add("id_api.listen", "%q is not host:port (empty disables the HTTP ID API)", a.Listen)
	}
	for _, n := range []struct {
		key string
		v   int64
	}{{"max_connections", int64(a.MaxConnections)}, {"max_connections_per_host", int64(a.MaxConnectionsPerHost)},
		{"header_timeout", int64(a.HeaderTimeout)}, {"idle_timeout", int64(a.IdleTimeout)}, {"write_timeout", int64(a.WriteTimeout)},
		{"max_header_bytes", int64(a.MaxHeaderBytes)}} {
		if n.v < 0 {
			add("id_api."+n.key, "negative: must be positive (0 takes the default)")
		}
	}
	if a.WriteTimeout > 0 && a.WriteTimeout.D() <= c.Sequences.WaitTimeout.D() {
		add("id_api.write_timeout", "%v: must be longer than sequences.wait_timeout (%v), which a request may wait for a segment", a.WriteTimeout.D(), c.Sequences.WaitTimeout.D())
	}
	if a.MaxHeaderBytes > 0 && a.MaxHeaderBytes < 1024 {
		add("id_api.max_header_bytes", "%d: at least 1024 (default %d)", a.MaxHeaderBytes, DefaultAPIMaxHeaderBytes)
	}
	if tag := a.LeafDecodeTag; tag != "" {
		if t, ok := c.Sequences.Tags[tag]; ok && t.Generator != GeneratorSnowflake {
			add("id_api.leaf_decode_tag", "%q is a %s tag: Leaf's /decodeSnowflakeId decodes snowflake IDs; name a snowflake tag", tag, t.Generator)
		}
	}
	if len(a.Tokens) == 0 {
		add("id_api.tokens", "none: every request would be refused (401); list at least one {name, token (or token_env, token_file), tags}")
	}
	names := map[string]bool{}
	secrets := map[string]int{}
	for i, t := range a.Tokens {
		c.validateAPIToken(add, i, t, names, secrets)
	}
}

// validateAPIToken checks id_api.tokens[i]: a name not used before (names
// holds the earlier tokens'), a token long enough and not an earlier
// token's (secrets: token to index), rate, max_new_tags and tags.
func (c *Config) validateAPIToken(add func(key, format string, a ...any), i int, t APIToken, names map[string]bool, secrets map[string]int) {
	key := fmt.Sprintf("id_api.tokens[%d]", i)
	switch {
	case t.Name == "":
		add(key+".name", "empty: name the caller (the audit log shows it)")
	case names[t.Name]:
		add(key+".name", "%q listed twice", t.Name)
	}
	names[t.Name] = true
	switch {
	case t.Token == "" && t.TokenEnv == "" && t.TokenFile == "":
		add(key+".token", "no token: set token, token_env or token_file")
	case t.Token == "":
		// ResolveSecrets reported why the env or file gave none.
	case len(t.Token) < MinTokenLength:
		add(key+".token", "%d characters: a token must have at least %d (e.g. openssl rand -hex 32)", len(t.Token), MinTokenLength)
	default:
		if j, dup := secrets[t.Token]; dup {
			add(key+".token", "the same token as id_api.tokens[%d]: give each caller its own", j)
		}
		secrets[t.Token] = i
	}
	if t.Rate < 0 {
		add(key+".rate", "%d: requests a second must be positive (default %d)", t.Rate, DefaultAPITokenRate)
	}
	if t.MaxNewTags != nil && *t.MaxNewTags < 0 {
		add(key+".max_new_tags", "%d: must be 0 (creates none) or more (default %d)", *t.MaxNewTags, DefaultAPIMaxNewTags)
	}
	if len(t.Tags) == 0 {
		add(key+".tags", "none: list the tags this token may use, or [\"*\"] for every tag")
	}
	for j, tag := range t.Tags {
		_, declared := c.Sequences.Tags[tag]
		switch {
		case tag == "":
			add(fmt.Sprintf("%s.tags[%d]", key, j), "empty")
		case declared || tag == "*" || ruleTag(c, tag):
		default:
			// A name one typo away from a declared tag is a typo.
			if near := suggest(tag, slices.Sorted(maps.Keys(c.Sequences.Tags))); near != "" {
				add(fmt.Sprintf("%s.tags[%d]", key, j), "%q is not declared in sequences.tags (did you mean %q?)", tag, near)
			}
		}
	}
}

// ruleTag says whether a table rule names tag.
func ruleTag(c *Config, tag string) bool {
	for _, t := range c.Tables {
		if t.Tag == tag {
			return true
		}
	}
	return false
}
