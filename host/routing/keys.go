package routing

import (
	"errors"
	"math/rand/v2"
	"slices"
)

// Key is the part of a provider key that routing needs.
type Key struct {
	ID                string
	Weight            float64
	Enabled           bool
	Models            []string
	BlacklistedModels []string
	Aliases           map[string]string
}

// ErrNoKey means no enabled key of the provider allows the model.
var ErrNoKey = errors.New("no enabled key of this provider allows the model")

// Allows reports whether k may serve model: enabled, on the allow list when
// there is one (an alias counts as listed), and not on the block list.
func (k *Key) Allows(model string) bool {
	if !k.Enabled || slices.Contains(k.BlacklistedModels, model) {
		return false
	}
	if len(k.Models) == 0 {
		return true
	}
	if slices.Contains(k.Models, model) {
		return true
	}
	_, aliased := k.Aliases[model]
	return aliased
}

// Resolve maps the user-facing model name through the key's aliases
// (deployment names, inference profile ids, fine-tune ids).
func (k *Key) Resolve(model string) string {
	if a, ok := k.Aliases[model]; ok {
		return a
	}
	return model
}

// SelectKey picks a key for model by weight among the keys that allow it,
// skipping those in exclude (keys already tried by this request). Keys with
// weight 0 are used only when no weighted key qualifies. rnd may be nil.
func SelectKey(keys []Key, model string, exclude map[string]bool, rnd *rand.Rand) (*Key, error) {
	var total float64
	var zero *Key
	n := 0
	for i := range keys {
		k := &keys[i]
		if exclude[k.ID] || !k.Allows(model) {
			continue
		}
		n++
		if k.Weight > 0 {
			total += k.Weight
		} else if zero == nil {
			zero = k
		}
	}
	if n == 0 {
		return nil, ErrNoKey
	}
	if total == 0 {
		return zero, nil
	}
	var r float64
	if rnd != nil {
		r = rnd.Float64() * total
	} else {
		r = rand.Float64() * total
	}
	var last *Key
	for i := range keys {
		k := &keys[i]
		if exclude[k.ID] || !k.Allows(model) || k.Weight <= 0 {
			continue
		}
		last = k
		if r < k.Weight {
			return k, nil
		}
		r -= k.Weight
	}
	return last, nil
}
