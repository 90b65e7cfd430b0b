package main_test

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
)

// runtimeDefaults reads the GODEBUG defaults the Makefile links into the
// gateway (RUNTIME_DEFAULTS), the one place they are set.
func runtimeDefaults() (string, error) {
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		return "", err
	}
	m := regexp.MustCompile(`(?m)^RUNTIME_DEFAULTS \?= (\S+)$`).FindSubmatch(mk)
	if m == nil {
		return "", fmt.Errorf("no RUNTIME_DEFAULTS line in the Makefile")
	}
	if !strings.Contains(string(mk), "-X runtime.godebugDefault=$(RUNTIME_DEFAULTS)") {
		return "", fmt.Errorf("the Makefile's LDFLAGS do not link RUNTIME_DEFAULTS")
	}
	return string(m[1]), nil
}

// TestShippedBuildKeepsSysmonAwake guards the setting BENCHMARKS.md
// measured: without schedtrace the runtime's sysmon thread sleeps deeply
// whenever the gateway is idle for a moment, and the next system call of
// a request has to wake it (~20% of a request's CPU at concurrency 1).
func TestShippedBuildKeepsSysmonAwake(t *testing.T) {
	d, err := runtimeDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(^|,)schedtrace=[1-9][0-9]*(,|$)`).MatchString(d) {
		t.Fatalf("RUNTIME_DEFAULTS = %q: want a positive schedtrace", d)
	}
}
