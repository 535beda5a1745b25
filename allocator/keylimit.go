package allocator

import "github.com/leafproxy/leafproxy/allocator/segment"

// KeyLimit is the largest ID a segment tag's IDs are of use for: the
// widest key column filled from it (segment.Limit).
type KeyLimit = segment.Limit

// SetKeyLimits replaces every segment tag's KeyLimit: past it no segment
// is fetched and the tag answers 167 (segment.PastEndError).
func (s *Sequences) SetKeyLimits(limits map[string]KeyLimit) { s.segments.SetLimits(limits) }
