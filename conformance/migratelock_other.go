//go:build !unix

package conformance

// oneMigrateAtATime runs f: without flock, migrations of concurrent test
// binaries may wait for each other until the MIGRATE's timeout.
func oneMigrateAtATime(f func() error) error { return f() }
