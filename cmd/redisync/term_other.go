//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package main

import "errors"

// isTTY reports false: top prints plain tables on this system.
func isTTY(int) bool { return false }

// makeRaw is not supported on this system.
func makeRaw(int) (func(), error) {
	return nil, errors.New("raw terminal mode is not supported on this system")
}

// terminalSize is not known on this system.
func terminalSize(int) (int, int, bool) { return 0, 0, false }
