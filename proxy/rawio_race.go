//go:build race

package proxy

// Under the race detector the legs keep net.Conn's Read and Write: those
// tell the detector that a write to a socket happens before the read of
// it (internal/poll's ioSync), which tests rely on; raw system calls do not.
const raceBuild = true
