package snowflake

// abandon stops the generator the way a crash would: no release, no final
// state file. For tests of restarts after a crash.
func (g *Generator) abandon() {
	g.mu.Lock()
	already := g.closed
	g.closed = true
	g.mu.Unlock()
	if !already {
		close(g.stop)
		<-g.done
	}
}
