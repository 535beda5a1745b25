package allocator

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-sql-driver/mysql"
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
	rows, err := s.db.QueryContext(ctx, "SELECT biz_tag, max_id, step, COALESCE(description, ''), COALESCE(max_value, 0) FROM leaf_alloc")
	var me *mysql.MySQLError
	if errors.As(err, &me) && me.Number == 1054 {
		// A leaf_alloc without max_value (its account could not add it).
		rows, err = s.db.QueryContext(ctx, "SELECT biz_tag, max_id, step, COALESCE(description, ''), 0 FROM leaf_alloc")
	}
	if err != nil {
		return nil, fmt.Errorf("read leaf_alloc: %w", err)
	}
	defer rows.Close()
	out := map[string]StoreRow{}
	for rows.Next() {
		var tag string
		var r StoreRow
		if err := rows.Scan(&tag, &r.MaxID, &r.Step, &r.Description, &r.MaxValue); err != nil {
			return nil, fmt.Errorf("read leaf_alloc: %w", err)
		}
		out[tag] = r
	}
	return out, rows.Err()
}
