//go:build unix

package conformance

import (
	"os"
	"path/filepath"
	"syscall"
)

// oneMigrateAtATime runs f while no other MIGRATE of the suite runs on this
// machine, in this test binary or another (the matrix runs a binary per
// driver against the same Cluster). MIGRATE blocks its source master until
// the target answered: two masters migrating toward each other at once
// each wait for the other until the MIGRATE's timeout.
func oneMigrateAtATime(f func() error) error {
	lock, err := os.OpenFile(filepath.Join(os.TempDir(), "redlock-conformance-migrate.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return f()
	}
	defer lock.Close()
	if syscall.Flock(int(lock.Fd()), syscall.LOCK_EX) == nil {
		defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	}
	return f()
}
