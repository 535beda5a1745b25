package proxy

import "golang.org/x/sys/unix"

// look asks the kernel, without waiting, whether the peer has shut down
// its sending side (POLLRDHUP, set even while bytes it sent before are
// still unread) and, if so, whether anything waits to be read.
func (l *fdLook) look(fd uintptr) {
	l.poll[0] = unix.PollFd{Fd: int32(fd), Events: unix.POLLIN | unix.POLLRDHUP}
	n, err := unix.Ppoll(l.poll[:], &l.noWait, nil)
	p := l.poll[0]
	switch {
	case err != nil || n == 0:
	case p.Revents&(unix.POLLERR|unix.POLLHUP) != 0:
		l.gone = true
	case p.Revents&unix.POLLRDHUP == 0:
	case l.tls:
		l.gone = true // a close_notify record may come before the end
	default:
		l.gone = emptyFD(fd)
	}
}
