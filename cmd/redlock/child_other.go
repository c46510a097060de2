//go:build !linux

package main

import "os/exec"

// dieWithRedlock does nothing here: only Linux can have the kernel signal a
// child when its parent dies.
func dieWithRedlock(*exec.Cmd) {}
