package snowflake

import "time"

// LeaseExpiry is when the worker lease runs out unless renewed, as this
// process counts it (from its last good renewal on its own clock); zero for
// a fixed worker id that is registered nowhere. For operators' views.
func (g *Generator) LeaseExpiry() time.Time {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ttl <= 0 {
		return time.Time{}
	}
	return g.layout.Epoch.Add(g.renewedAt + g.ttl)
}
