//go:build tools

// Package tools names the commands scripts/critest.sh builds, so that go.mod and go.sum pin them.
package tools

import (
	_ "github.com/onsi/ginkgo/v2/ginkgo"
	_ "sigs.k8s.io/cri-tools/cmd/crictl"
	_ "sigs.k8s.io/cri-tools/cmd/critest"
)
