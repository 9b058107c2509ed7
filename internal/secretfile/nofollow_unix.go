//go:build unix

package secretfile

import "syscall"

const noFollow = syscall.O_NOFOLLOW
