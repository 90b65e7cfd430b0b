package pricing

import (
	"net/http"
	"net/url"
	"sort"
	"strings"
	"unicode"

	"github.com/gofiber/fiber/v2"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/host/auth"
	"github.com/wasmgate/gateway/host/listing"
	"github.com/wasmgate/gateway/host/providers"
)

// Routes registers /api/governance/pricing. Model ids may contain '/'
// (OpenRouter, Groq), hence the wildcard for the model.
func (s *Service) Routes(api *auth.Router) {
	view, upd := auth.Perm("Pricing", "View"), auth.Perm("Pricing", "Update")
	api.Get("/governance/pricing", view, s.list)
	api.Get("/governance/pricing/:provider/*", view, s.get)
	api.Put("/governance/pricing/:provider/*", upd, s.put)
	api.Delete("/governance/pricing/:provider/*", upd, s.delete)
}

// Entry is one row of the price list: a catalog price or an override.
type Entry struct {
	Provider string `json:"provider"`
	Model    string `json:"model"`
	// Source is "catalog" or "override".
	Source string `json:"source"`
	Price  Price  `json:"price"`
	// Overridden marks a catalog row that an override of the same
	// provider and model replaces.
	Overridden bool `json:"overridden,omitempty"`
}

func (s *Service) list(c *fiber.Ctx) error {
	limit, offset, e := listing.Page(c, listing.MaxLimit)
	if e != nil {
		return e
	}
	prov := strings.ToLower(strings.TrimSpace(c.Query("provider")))
	model := strings.ToLower(strings.TrimSpace(c.Query("model")))
	source := c.Query("source")
	if source != "" && source != "catalog" && source != "override" {
		return apierr.BadRequest("invalid_value", "source", "source must be catalog or override")
	}
	over := s.Overrides()
	overridden := map[string]bool{}
	rows := make([]Entry, 0, 160)
	for _, o := range over {
		overridden[overrideKey(o.Provider, o.Model)] = true
		if source != "catalog" && matches(o.Provider, o.Model, prov, model) {
			rows = append(rows, Entry{Provider: o.Provider, Model: o.Model, Source: "override", Price: o.Price})
		}
	}
	if source != "override" {
		for p, models := range s.prices {
			for m, price := range models {
				if matches(p, m, prov, model) {
					rows = append(rows, Entry{Provider: p, Model: m, Source: "catalog", Price: price,
						Overridden: overridden[overrideKey(p, m)]})
				}
			}
		}
	}
	sort.Slice(rows, func(i, j int) bool {
		a, b := &rows[i], &rows[j]
		if a.Provider != b.Provider {
			return a.Provider < b.Provider
		}
		if a.Model != b.Model {
			return a.Model < b.Model
		}
		return a.Source > b.Source // override first
	})
	out := listing.Window(rows, limit, offset)
	return c.JSON(fiber.Map{"pricing": out, "count": len(out), "total_count": len(rows),
		"limit": limit, "offset": offset, "catalog_as_of": s.asOf})
}

// matches filters by exact provider and model substring.
func matches(p, m, prov, model string) bool {
	return (prov == "" || p == prov) && (model == "" || strings.Contains(strings.ToLower(m), model))
}

// params reads and checks the provider and model of the path.
func params(c *fiber.Ctx) (provider, model string, e *apierr.Error) {
	provider = strings.ToLower(c.Params("provider"))
	if _, ok := providers.Lookup(provider); !ok {
		return "", "", apierr.BadRequest("invalid_value", "provider",
			"unknown provider "+quote(provider)+" (use one of "+knownIDs()+")")
	}
	raw := c.Params("*")
	model, err := url.PathUnescape(raw)
	if err != nil {
		return "", "", apierr.BadRequest("invalid_value", "model", "model is not a valid URL path segment")
	}
	if model == "" {
		return "", "", apierr.BadRequest("missing_field", "model", "model is required in the path: /api/governance/pricing/{provider}/{model}")
	}
	if len(model) > 256 {
		return "", "", apierr.BadRequest("invalid_value", "model", "model must be at most 256 characters")
	}
	for _, r := range model {
		if unicode.IsControl(r) || unicode.IsSpace(r) {
			return "", "", apierr.BadRequest("invalid_value", "model", "model must not contain spaces or control characters")
		}
	}
	return provider, model, nil
}

func quote(s string) string { return `"` + s + `"` }

func knownIDs() string {
	var ids []string
	for _, p := range providers.Catalog() {
		ids = append(ids, p.ID)
	}
	return strings.Join(ids, ", ")
}

// resolved is the answer of GET: the price a request for provider and
// model would be charged, and which entry it came from.
type resolved struct {
	Provider string    `json:"provider"`
	Model    string    `json:"model"`
	Source   string    `json:"source"`
	Matched  matched   `json:"matched"`
	Price    Price     `json:"price"`
	Override *Override `json:"override,omitempty"`
}

type matched struct {
	Provider string `json:"provider"`
	Model    string `json:"model"`
}

func (s *Service) get(c *fiber.Ctx) error {
	provider, model, e := params(c)
	if e != nil {
		return e
	}
	m, ok := s.Resolve(provider, model)
	if !ok {
		return apierr.New(http.StatusNotFound, apierr.TypeNotFound, "price_not_found",
			"no price for "+provider+"/"+model+": neither an override nor the bundled catalog matches it")
	}
	out := resolved{Provider: provider, Model: model, Source: m.Source.String(),
		Matched: matched{Provider: m.Table, Model: m.Model}}
	if m.Source == SourceOverride {
		o, _ := s.override(m.Table, m.Model)
		out.Price, out.Override = o.Price, &o
	} else {
		out.Price = s.catalogPrice(m.Table, m.Model)
	}
	return c.JSON(out)
}

// catalogPrice returns the bundled price as written (keys are lower case
// in the catalog file already).
func (s *Service) catalogPrice(table, model string) Price {
	return s.prices[table][model]
}

func (s *Service) put(c *fiber.Ctx) error {
	provider, model, e := params(c)
	if e != nil {
		return e
	}
	var p Price
	if e := apierr.DecodeJSON(c.Body(), &p); e != nil {
		return e
	}
	if e := p.Validate(); e != nil {
		return e
	}
	o, err := s.putOverride(c.UserContext(), s.st, Override{Provider: provider, Model: model, Price: p}, s.now().UTC())
	if err != nil {
		return apierr.Internal(err)
	}
	return c.JSON(o)
}

func (s *Service) delete(c *fiber.Ctx) error {
	provider, model, e := params(c)
	if e != nil {
		return e
	}
	found, err := s.deleteOverride(c.UserContext(), s.st, provider, model)
	if err != nil {
		return apierr.Internal(err)
	}
	if !found {
		return apierr.NotFound("pricing override", provider+"/"+model)
	}
	return c.JSON(fiber.Map{"status": "success", "message": "pricing override deleted; the bundled catalog prices " + provider + "/" + model + " again, if it lists it"})
}
