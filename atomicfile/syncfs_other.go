//go:build !linux

package atomicfile

import "errors"

// syncFS is syncfs(2), which only Linux has: elsewhere a Batch syncs each
// file and directory.
func syncFS(string) error { return errors.New("syncfs is Linux's") }
