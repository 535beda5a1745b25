package service_test

import (
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/allocator/segment"
	"github.com/leafproxy/leafproxy/allocator/snowflake"
	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/idapi"
	"github.com/leafproxy/leafproxy/proxy"
	"github.com/leafproxy/leafproxy/rewriter"
	"github.com/leafproxy/leafproxy/service"
)

// TestConfigDefaultsAreTheDomainDefaults: the config package writes its
// defaults as values (it imports no domain package); each must be the
// default of the package that owns the setting, so a file that leaves a
// key out gets what the package would pick for a zero option.
func TestConfigDefaultsAreTheDomainDefaults(t *testing.T) {
	c := config.Default()
	for _, d := range []struct {
		key         string
		config, own any
	}{
		{"backend.connect_timeout", c.Backend.ConnectTimeout.D(), time.Duration(proxy.DefaultConnectTimeout)},
		{"limits.max_handshakes", c.Limits.MaxHandshakes, proxy.DefaultMaxHandshakes},
		{"limits.max_silent_handshakes", c.Limits.MaxSilentHandshakes, proxy.DefaultMaxSilentHandshakes},
		{"limits.handshake_timeout", c.Limits.HandshakeTimeout.D(), time.Duration(proxy.DefaultHandshakeTimeout)},
		{"limits.command_memory", int64(c.Limits.CommandMemory), int64(proxy.DefaultCommandMemory)},
		{"limits.login_failures", c.Limits.LoginFailures, proxy.DefaultLoginFailures},
		{"limits.login_failure_interval", c.Limits.LoginFailureInterval.D(), time.Duration(proxy.DefaultLoginFailureInterval)},
		{"limits.login_block_max", c.Limits.LoginBlockMax.D(), time.Duration(proxy.DefaultLoginBlockMax)},
		{"limits.max_plan_depth", c.Limits.MaxPlanDepth, rewriter.DefaultMaxDepth},
		{"limits.plan_memory", int64(c.Limits.PlanMemory), int64(rewriter.DefaultPlanMemory)},
		{"sequences.default_step", c.Sequences.DefaultStep, int64(segment.DefaultStep)},
		{"sequences.wait_timeout", c.Sequences.WaitTimeout.D(), time.Duration(segment.DefaultWaitTimeout)},
		{"sequences.max_loaders", c.Sequences.MaxLoaders, segment.DefaultMaxLoaders},
		{"snowflake.random_start", *c.Snowflake.RandomStart, snowflake.DefaultRandomStart},
		{"snowflake.max_backward", c.Snowflake.MaxBackward.D(), time.Duration(snowflake.DefaultMaxBackward)},
		{"snowflake.lease_ttl", c.Snowflake.LeaseTTL.D(), time.Duration(snowflake.DefaultLeaseTTL)},
		{"id_api.max_connections", c.IDAPI.MaxConnections, idapi.DefaultMaxConnections},
		{"id_api.max_connections_per_host", c.IDAPI.MaxConnectionsPerHost, idapi.DefaultMaxConnectionsPerHost},
		{"id_api.header_timeout", c.IDAPI.HeaderTimeout.D(), idapi.DefaultHeaderTimeout},
		{"id_api.idle_timeout", c.IDAPI.IdleTimeout.D(), idapi.DefaultIdleTimeout},
		{"id_api.write_timeout", c.IDAPI.WriteTimeout.D(), idapi.DefaultWriteTimeout},
		{"id_api.max_header_bytes", int(c.IDAPI.MaxHeaderBytes), idapi.DefaultMaxHeaderBytes},
		{"id_api.tokens[].rate", config.DefaultAPITokenRate, idapi.DefaultRate},
		{"id_api.tokens[].max_new_tags", config.DefaultAPIMaxNewTags, idapi.DefaultMaxNewTags},
	} {
		if d.config != d.own {
			t.Errorf("%s: config's default %v, the owning package's %v", d.key, d.config, d.own)
		}
	}
	// The HTTP ID API's largest ?count is NEXTVAL's largest block.
	if idapi.DefaultMaxCount != rewriter.MaxBlock {
		t.Errorf("idapi.DefaultMaxCount %d, rewriter.MaxBlock %d", idapi.DefaultMaxCount, rewriter.MaxBlock)
	}
	// id_api is off by default.
	if c.IDAPI.Listen != "" || len(c.IDAPI.Tokens) != 0 {
		t.Errorf("id_api on by default: %+v", c.IDAPI)
	}
	l, err := service.SnowflakeLayout(c.Snowflake)
	if err != nil || l != snowflake.DefaultLayout() {
		t.Errorf("snowflake section's default layout %v (%v), the snowflake package's %v", l, err, snowflake.DefaultLayout())
	}
}
