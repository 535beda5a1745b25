package segment

import "time"

// Leaf's dynamic step: a segment that lasted less than stepGrowBelow was too
// small for the traffic, one that lasted more than stepShrinkAbove was too
// big (a restart would waste most of it).
const (
	stepGrowBelow   = 15 * time.Minute
	stepShrinkAbove = 30 * time.Minute
)

// nextStep sizes the next fetch from the current step and how long the
// previous segment lasted (time since the previous fetch): double under 15
// minutes, capped at maxStep; halve over 30 minutes; otherwise keep. The
// result is never below tableStep, the row's configured step, which wins
// over maxStep if an operator set it higher.
func nextStep(cur, tableStep, maxStep int64, lasted time.Duration) int64 {
	next := cur
	switch {
	case lasted < stepGrowBelow:
		if next < maxStep {
			next = min(next*2, maxStep)
		}
	case lasted >= stepShrinkAbove:
		next /= 2
	}
	if next < tableStep {
		next = tableStep
	}
	if next < 1 {
		next = 1
	}
	return next
}
