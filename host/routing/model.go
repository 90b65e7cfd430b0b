// Package routing decides where an inference request goes: which provider
// and model (primary, then fallbacks), which key of that provider, and when
// a failed attempt is retried.
package routing

import (
	"fmt"
	"strings"
)

// Target is one provider/model pair an attempt can go to.
type Target struct {
	Provider string
	Model    string
}

func (t Target) String() string {
	if t.Provider == "" {
		return t.Model
	}
	return t.Provider + "/" + t.Model
}

// Bare reports whether the target names a model without a provider: a
// request's primary model without "/", which a router (a virtual key's
// provider_configs) must assign a provider before it can be tried.
func (t Target) Bare() bool { return t.Provider == "" }

// ParseModel splits "<provider>/<model>". The model part may itself contain
// slashes (openrouter/anthropic/claude-3.5-sonnet), so only the first one
// separates the provider.
func ParseModel(s string) (Target, error) {
	p, m, ok := strings.Cut(s, "/")
	if !ok || p == "" || m == "" {
		return Target{}, fmt.Errorf("model %q must have the form <provider>/<model>, for example openai/gpt-4o-mini", s)
	}
	return Target{Provider: strings.ToLower(p), Model: m}, nil
}

// Plan is the ordered list of targets a request may try: the primary first,
// then the request's fallbacks in the order given.
type Plan struct {
	Targets []Target
}

// NewPlan parses the primary model and fallbacks, dropping duplicates so a
// fallback equal to the primary is not tried twice. A primary without any
// "/" is a bare model (Target.Bare): the plan holds it without a provider
// and the caller must route it or refuse it. Fallbacks always name their
// provider.
func NewPlan(primary string, fallbacks []string) (Plan, error) {
	var t Target
	if primary != "" && !strings.Contains(primary, "/") {
		t = Target{Model: primary}
	} else {
		var err error
		if t, err = ParseModel(primary); err != nil {
			return Plan{}, err
		}
	}
	plan := Plan{Targets: []Target{t}}
	seen := map[Target]bool{t: true}
	for i, f := range fallbacks {
		ft, err := ParseModel(f)
		if err != nil {
			return Plan{}, fmt.Errorf("fallbacks[%d]: %w", i, err)
		}
		if !seen[ft] {
			seen[ft] = true
			plan.Targets = append(plan.Targets, ft)
		}
	}
	return plan, nil
}
