package governance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/host/routing"
)

// defaultWeight is the weight of a provider config that names none, as for
// provider keys: equal shares unless told otherwise, and 0 only when asked.
const defaultWeight = 1

// UnmarshalJSON decodes a provider config strictly (unknown fields are
// refused, as in the body around it) and gives an absent weight the
// default of 1, so 0 keeps its meaning of "fallback only". Records stored
// before weights were used decode the same way.
func (pc *ProviderConfig) UnmarshalJSON(b []byte) error {
	type plain ProviderConfig
	p := plain{Weight: defaultWeight}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return err
	}
	*pc = ProviderConfig(p)
	return nil
}

// route is one provider config of a key, ready for routing bare models.
type route struct {
	provider string
	weight   float64
	// models are the allowed model names without the provider prefix
	// (allowed_models may use either form); nil allows every model.
	models map[string]bool
}

func (r *route) allows(model string) bool { return r.models == nil || r.models[model] }

// buildRoutes orders a key's provider configs for routing: by weight,
// heaviest first, ties (and the weight-0 standbys, last) in listing order.
// Done once per cache refresh so a request only walks a short slice.
func buildRoutes(pcs []ProviderConfig) []route {
	out := make([]route, 0, len(pcs))
	for _, pc := range pcs {
		out = append(out, route{provider: pc.Provider, weight: pc.Weight, models: modelSet(pc.Provider, pc.AllowedModels)})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].weight > out[j].weight })
	return out
}

// modelSet is allowed_models with any "<provider>/" prefix removed, so a
// lookup needs no concatenation; nil when every model is allowed.
func modelSet(provider string, models []string) map[string]bool {
	if len(models) == 0 {
		return nil
	}
	m := make(map[string]bool, len(models))
	for _, am := range models {
		m[strings.TrimPrefix(am, provider+"/")] = true
	}
	return m
}

// routeBare chooses the provider of a bare model among the key's provider
// configs that allow it: weighted random over those with weight > 0 (the
// first listed standby when all weigh 0). The plan is the chosen target,
// then the request's own fallbacks, then the other eligible providers by
// descending weight. It allocates only the returned slice.
func (e *entry) routeBare(targets []routing.Target, rnd func() float64) ([]routing.Target, *apierr.Error) {
	model := targets[0].Model
	var total float64
	eligible, chosen := 0, -1
	for i := range e.routes {
		r := &e.routes[i]
		if !r.allows(model) {
			continue
		}
		eligible++
		if r.weight > 0 {
			total += r.weight
		} else if chosen < 0 && total == 0 {
			// Routes are sorted heaviest first, so a standby is only seen
			// before any weighted one when there is none.
			chosen = i
		}
	}
	if eligible == 0 {
		if len(e.routes) == 0 {
			return nil, apierr.BadRequest("invalid_model", "model", fmt.Sprintf(
				`model %q names no provider and virtual key %q has no provider_configs to route it: send "<provider>/<model>"`, model, e.vk.Name))
		}
		return nil, apierr.BadRequest("no_provider_for_model", "model", fmt.Sprintf(
			`no provider of virtual key %q allows model %q: add it to a provider's allowed_models, or send "<provider>/<model>"`, e.vk.Name, model))
	}
	if total > 0 {
		x := rnd() * total
		for i := range e.routes {
			r := &e.routes[i]
			if !r.allows(model) || r.weight <= 0 {
				continue
			}
			chosen = i
			if x < r.weight {
				break
			}
			x -= r.weight
		}
	}
	out := make([]routing.Target, 0, len(targets)+eligible-1)
	out = append(out, routing.Target{Provider: e.routes[chosen].provider, Model: model})
	for _, t := range targets[1:] {
		out = appendNew(out, t)
	}
	for i := range e.routes {
		if r := &e.routes[i]; i != chosen && r.allows(model) {
			out = appendNew(out, routing.Target{Provider: r.provider, Model: model})
		}
	}
	return out, nil
}

// appendNew appends t unless the plan already has it (plans are short).
func appendNew(plan []routing.Target, t routing.Target) []routing.Target {
	for _, p := range plan {
		if p == t {
			return plan
		}
	}
	return append(plan, t)
}
