package segment

import "context"

// Create adds tag to the store with the given initial step (above the keys
// of existing rule tables when the store knows them; an existing tag is
// left as it is), for an operator's CREATE LEAFPROXY SEQUENCE.
func (a *Allocator) Create(ctx context.Context, tag string, step int64) error {
	if step <= 0 {
		step = a.opts.DefaultStep
	}
	return a.store.Create(ctx, tag, step)
}
