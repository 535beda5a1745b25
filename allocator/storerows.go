package allocator

import (
	"context"
	"fmt"
)

// StoreRow is one leaf_alloc row as the store holds it now.
type StoreRow struct {
	MaxID, Step int64
	Description string // who created the row and how
	MaxValue    int64  // MAXVALUE (leaf_alloc.max_value); 0: none
}

// StoreRows reads every tag's row from leaf_alloc (admin views: max_id is
// the end of the last segment handed to any proxy, not the last ID issued).
func (s *Sequences) StoreRows(ctx context.Context) (map[string]StoreRow, error) {
	rows, err := s.store.Rows(ctx)
	if err != nil {
		return nil, fmt.Errorf("read leaf_alloc: %w", err)
	}
	return rows, nil
}
