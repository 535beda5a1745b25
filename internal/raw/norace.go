//go:build !race

package raw

import "unsafe"

const raceEnabled = false

func raceAcquire(unsafe.Pointer)         {}
func raceReleaseMerge(unsafe.Pointer)    {}
func raceReadRange(unsafe.Pointer, int)  {}
func raceWriteRange(unsafe.Pointer, int) {}
