//go:build !linux

package realredis

import "syscall"

func sysProcAttr() *syscall.SysProcAttr { return nil }
