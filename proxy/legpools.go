package proxy

import (
	"bufio"
	"sync"
)

// Idle sessions give their buffers back (Session.park): a parked leg has
// no writer (and a backend leg no reader) until the next command. The pools
// hold buffers of the session's standard sizes only.
var (
	clientWriters = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, clientWriteBuf) }}
	backWriters   = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, backWriteBuf) }}
	backReaders   = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, backReadBuf) }}
)
