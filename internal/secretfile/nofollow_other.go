//go:build !unix

package secretfile

// O_EXCL already refuses an existing name, a symbolic link included.
const noFollow = 0
