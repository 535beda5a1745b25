package segment

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/leafproxy/leafproxy/internal/nonblock"
)

// MaxID reads tag's max_id from the store: the end of the last range the
// store handed out to any allocator (segments and blocks are [max_id-step,
// max_id)), so every ID below it was handed out (or skipped) and none at
// or above it yet. One query, bounded by FetchTimeout; not for an event
// loop's caller (nonblock.ErrWouldBlock). A tag without a row is an
// *UnknownTagError, whatever AutoCreate says: reading creates nothing.
func (a *Allocator) MaxID(ctx context.Context, tag string) (int64, error) {
	if tag == "" || !utf8.ValidString(tag) || utf8.RuneCountInString(tag) > maxTagLen {
		return 0, &UnknownTagError{Tag: strings.Clone(tag)}
	}
	if nonblock.Requested(ctx) {
		return 0, nonblock.ErrWouldBlock
	}
	ctx, cancel := context.WithTimeout(ctx, a.opts.FetchTimeout)
	defer cancel()
	got, err := a.store.Peek(ctx, []string{tag})
	if err != nil {
		return 0, fmt.Errorf("read max_id of sequence %q: %w", tag, err)
	}
	v, ok := got[tag]
	if !ok {
		return 0, &UnknownTagError{Tag: strings.Clone(tag)}
	}
	return v, nil
}
