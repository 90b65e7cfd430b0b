// Package pricing prices inference requests: a bundled catalog of list
// prices for the common models of the supported providers, overrides per
// provider and model managed through /api/governance/pricing and kept in
// the main store, and the arithmetic turning a request's usage into USD.
package pricing

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/wasmgate/gateway/host/inference"
)

//go:embed catalog.json
var bundledJSON []byte

// bundledDoc is the shape of catalog.json.
type bundledDoc struct {
	AsOf string `json:"as_of"`
	// Aliases name the catalog tables a provider reuses after its own:
	// azure serves OpenAI's models, vertex Google's, Anthropic's and
	// Mistral's.
	Aliases map[string][]string `json:"aliases"`
	// Vendors map a model id prefix ("anthropic." on Bedrock,
	// "openai/" on OpenRouter) to the table of the vendor it names.
	Vendors   map[string]string           `json:"vendors"`
	Providers map[string]map[string]Price `json:"providers"`
}

// table maps a lower-case model id to its rates.
type table map[string]*rates

// Catalog resolves a provider and model to a price. It is safe for
// concurrent use; lookups take no locks and allocate nothing.
type Catalog struct {
	asOf    string
	bundled map[string]table
	prices  map[string]map[string]Price // bundled, as written, for listing
	aliases map[string][]string
	vendors map[string]string
	// over is the current override snapshot, replaced whole on change.
	over atomic.Pointer[overrideSet]
	// mu serialises override writers so each publishes what it stored.
	mu sync.Mutex
}

// overrideSet is an immutable snapshot of the overrides, with the memo of
// lookups made against it (a new snapshot starts with an empty memo, so a
// changed override is seen by the next request).
type overrideSet struct {
	rates map[string]table // provider -> model -> rates
	list  []Override       // sorted by provider, model
	memo  memo
}

// maxMemo bounds the memo: model names come from clients, so it must not
// grow without limit. Past it, lookups are resolved every time (still
// allocation-free, a few hundred ns).
const maxMemo = 4096

type memoKey struct{ provider, model string }

// memo remembers resolutions, hits and misses alike, keyed by the
// provider and model exactly as requested.
type memo struct {
	mu sync.RWMutex
	m  map[memoKey]Match
}

func (m *memo) get(k memoKey) (Match, bool) {
	m.mu.RLock()
	v, ok := m.m[k]
	m.mu.RUnlock()
	return v, ok
}

func (m *memo) put(k memoKey, v Match) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil {
		m.m = map[memoKey]Match{}
	}
	if len(m.m) < maxMemo {
		// Cloned: the caller's strings may point into a request buffer.
		m.m[memoKey{strings.Clone(k.provider), strings.Clone(k.model)}] = v
	}
}

// NewCatalog loads the bundled catalog. It never touches the network.
func NewCatalog() (*Catalog, error) {
	var doc bundledDoc
	if err := json.Unmarshal(bundledJSON, &doc); err != nil {
		return nil, fmt.Errorf("pricing: bundled catalog: %w", err)
	}
	c := &Catalog{asOf: doc.AsOf, bundled: map[string]table{}, prices: doc.Providers,
		aliases: doc.Aliases, vendors: doc.Vendors}
	for prov, models := range doc.Providers {
		t := table{}
		for m, p := range models {
			if e := p.Validate(); e != nil {
				return nil, fmt.Errorf("pricing: bundled catalog: %s/%s: %s", prov, m, e.Detail.Message)
			}
			t[strings.ToLower(m)] = p.rates()
		}
		c.bundled[prov] = t
	}
	c.over.Store(&overrideSet{rates: map[string]table{}})
	return c, nil
}

// Source says where a resolved price came from.
type Source uint8

// Price sources.
const (
	SourceNone Source = iota
	SourceCatalog
	SourceOverride
)

func (s Source) String() string {
	switch s {
	case SourceCatalog:
		return "catalog"
	case SourceOverride:
		return "override"
	}
	return "none"
}

// Match is the entry a lookup resolved to: the table (a provider of the
// catalog, or the requested provider for an override) and the model key.
type Match struct {
	Source Source
	Table  string
	Model  string
	r      *rates
}

// Cost is the USD price of usage u on provider's model; known is false
// when neither an override nor the catalog prices the model.
func (c *Catalog) Cost(provider, model string, u inference.Usage) (usd float64, known bool) {
	m, ok := c.Resolve(provider, model)
	if !ok {
		return 0, false
	}
	return m.r.cost(u).Total, true
}

// Price implements inference.Pricer: the cost broken down as billed_usage
// reports it.
func (c *Catalog) Price(provider, model string, u inference.Usage) (inference.CostBreakdown, bool) {
	m, ok := c.Resolve(provider, model)
	if !ok {
		return inference.CostBreakdown{}, false
	}
	return m.r.cost(u), true
}

// Resolve finds the price of provider's model; see docs/pricing.md for the
// matching rule. At every normalisation step an override of the requested
// provider is tried before the catalog, so an override of "gpt-4o" also
// prices "gpt-4o-2024-08-06".
func (c *Catalog) Resolve(provider, model string) (Match, bool) {
	set := c.over.Load()
	k := memoKey{provider, model}
	if m, ok := set.memo.get(k); ok {
		return m, m.Source != SourceNone
	}
	m, ok := c.resolve(set, provider, model)
	set.memo.put(k, m)
	return m, ok
}

func (c *Catalog) resolve(set *overrideSet, provider, model string) (Match, bool) {
	provider = strings.ToLower(provider)
	model = strings.ToLower(strings.TrimSpace(model))
	if model == "" {
		return Match{}, false
	}
	ov := set.rates[provider]
	if m, ok := c.walk(ov, provider, model); ok {
		return m, true
	}
	// Bedrock cross-region inference profiles: "us.anthropic.claude-...".
	if i := strings.IndexByte(model, '.'); i > 0 && isRegion(model[:i]) {
		model = model[i+1:]
		if m, ok := c.walk(ov, provider, model); ok {
			return m, true
		}
	}
	// A vendor prefix names the model's maker, whose list price applies:
	// "anthropic.claude-..." on Bedrock, "openai/gpt-4o" on OpenRouter.
	if i := strings.IndexAny(model, "./"); i > 0 {
		if t, ok := c.vendors[model[:i]]; ok {
			if m, ok := c.walkTable(t, model[i+1:]); ok {
				return m, true
			}
		}
	}
	// Resource paths: "models/gemini-1.5-pro",
	// "publishers/google/models/gemini-2.0-flash-001".
	if i := strings.LastIndexByte(model, '/'); i >= 0 && i < len(model)-1 {
		return c.walk(ov, provider, model[i+1:])
	}
	return Match{}, false
}

// walk tries model and its trimmed forms against provider's overrides, its
// own table and its alias tables, in that order at each step.
func (c *Catalog) walk(ov table, provider, model string) (Match, bool) {
	aliases := c.aliases[provider]
	own := c.bundled[provider]
	for m, ok := model, true; ok; m, ok = trimSuffix(m) {
		if r := ov[m]; r != nil {
			return Match{Source: SourceOverride, Table: provider, Model: m, r: r}, true
		}
		if r := own[m]; r != nil {
			return Match{Source: SourceCatalog, Table: provider, Model: m, r: r}, true
		}
		for _, a := range aliases {
			if r := c.bundled[a][m]; r != nil {
				return Match{Source: SourceCatalog, Table: a, Model: m, r: r}, true
			}
		}
	}
	return Match{}, false
}

func (c *Catalog) walkTable(t, model string) (Match, bool) {
	tab := c.bundled[t]
	for m, ok := model, true; ok; m, ok = trimSuffix(m) {
		if r := tab[m]; r != nil {
			return Match{Source: SourceCatalog, Table: t, Model: m, r: r}, true
		}
	}
	return Match{}, false
}

// trimSuffix removes one version-like suffix from a model id: anything
// after ':' or '@' (Bedrock ":0", Vertex "@20241022"), then a trailing
// "-segment" that is a number of two or more digits (dates, "-002",
// "-0125"), a version ("-v2", "-v3.0") or one of latest, preview, exp,
// beta. Single digits are kept: "claude-opus-4-5" must not price as
// "claude-opus-4".
func trimSuffix(m string) (string, bool) {
	if i := strings.LastIndexAny(m, ":@"); i > 0 {
		return m[:i], true
	}
	i := strings.LastIndexByte(m, '-')
	if i <= 0 {
		return m, false
	}
	seg := m[i+1:]
	switch {
	case len(seg) >= 2 && allDigits(seg),
		len(seg) >= 2 && seg[0] == 'v' && allDigitsOrDots(seg[1:]),
		seg == "latest", seg == "preview", seg == "exp", seg == "beta":
		return m[:i], true
	}
	return m, false
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return len(s) > 0
}

func allDigitsOrDots(s string) bool {
	if len(s) == 0 || s[0] < '0' || s[0] > '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if (s[i] < '0' || s[i] > '9') && s[i] != '.' {
			return false
		}
	}
	return true
}

// isRegion reports a Bedrock cross-region inference profile prefix.
func isRegion(p string) bool {
	switch p {
	case "us", "eu", "apac", "global", "us-gov", "jp", "au", "ca":
		return true
	}
	return false
}
