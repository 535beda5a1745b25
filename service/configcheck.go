package service

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/leafproxy/leafproxy/allocator/schema"
	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/rewriter"
)

// DomainRules is the config.Check of the rules the domain packages own: tag
// names (allocator/schema), table rules (rewriter) and snowflake layouts
// (allocator/snowflake, through SnowflakeLayout). Each problem names its
// key; config.Parse adds the line. Pass it wherever a configuration is
// loaded or validated: config.Load(path, service.DomainRules).
func DomainRules(c *config.Config) []config.Problem {
	var probs []config.Problem
	add := func(key, format string, a ...any) {
		probs = append(probs, config.Problem{Key: key, Msg: fmt.Sprintf(format, a...)})
	}
	for _, name := range slices.Sorted(maps.Keys(c.Sequences.Tags)) {
		if err := schema.CheckTag(name); err != nil {
			add("sequences.tags", "tag name %q: %v", name, err)
		}
	}
	for _, p := range rewriter.CheckRules(RewriterRules(c)) {
		add(fmt.Sprintf("tables[%d].%s", p.Index, p.Field), "%s", p.Msg)
	}
	for i, t := range c.Tables {
		if t.Tag == "" {
			continue
		}
		if err := schema.CheckTag(t.Tag); err != nil {
			add(fmt.Sprintf("tables[%d].tag", i), "%q: %v", t.Tag, err)
		}
		if t.PerTable && c.Sequences.Tags[t.Tag].Generator == config.GeneratorSnowflake {
			add(fmt.Sprintf("tables[%d].per_table", i), "tag %q is a snowflake tag, whose IDs are unique without a counter: per_table gives segment tags a counter per table; remove per_table or use a segment tag", t.Tag)
		}
	}
	if _, err := c.Snowflake.EpochTime(); err != nil {
		return probs // config.Validate reports snowflake.epoch
	}
	if _, err := SnowflakeLayout(c.Snowflake); err != nil {
		add("snowflake", "%v", err)
		return probs
	}
	return append(probs, tagLayoutProblems(c)...)
}

// tagLayoutProblems checks the tags' layouts: keys only on snowflake tags,
// valid layouts, and a fixed worker id that fits each.
func tagLayoutProblems(c *config.Config) []config.Problem {
	var probs []config.Problem
	fixed, fixedErr := strconv.ParseInt(c.Snowflake.WorkerID, 10, 64)
	for _, name := range slices.Sorted(maps.Keys(c.Sequences.Tags)) {
		t := c.Sequences.Tags[name]
		key := "sequences.tags." + name
		if t.Generator != config.GeneratorSnowflake {
			if t.IsSet() {
				probs = append(probs, config.Problem{Key: key, Msg: "layout, time_bits, worker_bits, sequence_bits, time_unit and epoch apply to snowflake tags only (generator: snowflake)"})
			}
			continue
		}
		l, err := TagLayout(c, name)
		if err != nil {
			probs = append(probs, config.Problem{Key: key, Msg: err.Error()})
			continue
		}
		if fixedErr == nil && fixed > l.MaxWorker() {
			probs = append(probs, config.Problem{Key: "snowflake.worker_id", Msg: fmt.Sprintf("%d does not fit the layout of sequences.tags.%s (%d worker bits: 0 to %d); use auto or a smaller id",
				fixed, name, l.WorkerBits, l.MaxWorker())})
		}
	}
	return probs
}

// ValidateConfig is c.Validate with DomainRules: every problem, the
// package's own and the domain packages', as one *config.Error.
func ValidateConfig(c *config.Config) error { return c.Validate(DomainRules) }

// LoadConfig is config.Load with DomainRules.
func LoadConfig(path string) (*config.Config, error) { return config.Load(path, DomainRules) }

// ParseConfig is config.Parse with DomainRules.
func ParseConfig(b []byte) (*config.Config, error) { return config.Parse(b, DomainRules) }
