package snowflake

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// state is the local state file: the worker id this process last held and
// an instant all its IDs lie before. For a fixed worker the instant is a
// reservation written ahead of use (the generator never issues at or past
// what the file says), so even a crash leaves a safe mark; a clean Close
// writes the exact mark.
type state struct {
	Worker          int64  `json:"worker_id"`
	HighWaterUnixMs int64  `json:"high_water_unix_ms"`
	HighWater       string `json:"high_water"` // for people reading the file
}

func (s state) highWater() time.Time { return time.UnixMilli(s.HighWaterUnixMs) }

// readState returns ok=false when the file does not exist. A file that
// exists but cannot be read is an error: starting without the mark it holds
// could re-issue IDs.
func readState(path string) (st state, ok bool, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return state{}, false, nil
	}
	if err != nil {
		return state{}, false, fmt.Errorf("read snowflake state file %s: %w", path, err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return state{}, false, fmt.Errorf("parse snowflake state file %s (fix or remove it): %w", path, err)
	}
	return st, true, nil
}

// writeState replaces the file atomically: a reader (or a restart after a
// crash) sees the old content or the new, never a torn one.
func writeState(path string, worker int64, highWaterMs int64) error {
	st := state{Worker: worker, HighWaterUnixMs: highWaterMs,
		HighWater: time.UnixMilli(highWaterMs).UTC().Format(time.RFC3339Nano)}
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("write snowflake state file %s: %w", path, err)
	}
	tmp := f.Name()
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write snowflake state file %s: %w", path, err)
	}
	// Make the rename itself durable.
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
