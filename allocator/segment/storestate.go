package segment

import "time"

// The store's state as fetches find it: the first failed fetch after a
// good one logs "allocation store down" (error level) and the first good
// one after failures "allocation store up" (info), once each however many
// tags and retries fail meanwhile (each failure is logged at debug level).
// A fetch the store answered, with a segment or "no such tag", is a good
// one; a segment refused as below the high-water mark is not a store
// outage and changes nothing here.

func (a *Allocator) storeFailed(tag string, err error) {
	if a.storeDown.Fail(time.Now()) {
		a.log.Error("allocation store down: segment fetches fail; NEXTVAL and key filling go on from the buffered segments, then wait and fail until it answers",
			"tag", tag, "err", err)
	}
}

func (a *Allocator) storeAnswered(tag string) {
	if lasted, ended := a.storeDown.Recover(time.Now()); ended {
		a.log.Info("allocation store up: segment fetches succeed again", "tag", tag, "down_for", lasted.Round(time.Millisecond).String())
	}
}

// StoreFailing reports whether the last segment fetch failed (the store
// did not answer): true from the first failure to the next fetch it
// answers.
func (a *Allocator) StoreFailing() bool { return a.storeDown.Down() }
