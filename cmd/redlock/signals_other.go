//go:build !unix

package main

import "os"

func forwardedSignals() []os.Signal { return []os.Signal{os.Interrupt} }

var stopSignals = []os.Signal{os.Interrupt}

var terminalSignals = []os.Signal{os.Interrupt}
