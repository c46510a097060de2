//go:build redlock_redigo && redlock_rueidis

package auto

// The two tags select different drivers. With both, auto_redigo.go is
// built and this fails the build with a message that says why.
var _ = set_only_one_of_the_build_tags_redlock_redigo_and_redlock_rueidis
