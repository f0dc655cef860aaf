package realredis

import "syscall"

// sysProcAttr asks Linux to SIGKILL the server when the thread that started
// it dies, so a test binary killed by its -timeout leaves no server behind.
// It is best effort (Go may retire that thread earlier); t.Cleanup is the
// normal way every server is stopped.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
