package main

import (
	"os"
	"testing"

	"github.com/durawait/durawait/internal/datadir"
)

// The data dirs these tests take are noted in a registry of their own,
// not the user's.
func TestMain(m *testing.M) {
	reg, err := os.MkdirTemp("", "durawait-registry")
	if err != nil {
		panic(err)
	}
	os.Setenv(datadir.RegistryEnv, reg)
	code := m.Run()
	os.RemoveAll(reg)
	os.Exit(code)
}
