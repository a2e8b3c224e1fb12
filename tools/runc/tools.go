//go:build tools

// Package tools names the command scripts/runc.sh builds, so that go.mod and go.sum pin it.
package tools

import (
	_ "github.com/opencontainers/runc"
)
