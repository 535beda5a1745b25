//go:build race

package raw

import (
	"runtime"
	"unsafe"
)

const raceEnabled = true

func raceAcquire(addr unsafe.Pointer)             { runtime.RaceAcquire(addr) }
func raceReleaseMerge(addr unsafe.Pointer)        { runtime.RaceReleaseMerge(addr) }
func raceReadRange(addr unsafe.Pointer, len int)  { runtime.RaceReadRange(addr, len) }
func raceWriteRange(addr unsafe.Pointer, len int) { runtime.RaceWriteRange(addr, len) }
