package providers

import (
	"fmt"

	"github.com/gofiber/fiber/v2"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/host/auth"
	"github.com/wasmgate/gateway/host/listing"
)

// Routes registers the management routes, each with its permission.
func (s *Service) Routes(r *auth.Router) {
	r.Get("/providers", auth.Perm("Providers", "View"), s.listProviders)
	r.Post("/providers", auth.Perm("Providers", "Create"), s.createProvider)
	r.Get("/providers/:provider", auth.Perm("Providers", "View"), s.getProvider)
	r.Put("/providers/:provider", auth.Perm("Providers", "Update"), s.updateProvider)
	r.Delete("/providers/:provider", auth.Perm("Providers", "Delete"), s.deleteProvider)

	r.Get("/providers/:provider/keys", auth.Perm("Keys", "View"), s.listKeys)
	r.Post("/providers/:provider/keys", auth.Perm("Keys", "Create"), s.createKey)
	r.Get("/providers/:provider/keys/:key_id", auth.Perm("Keys", "View"), s.getKey)
	r.Put("/providers/:provider/keys/:key_id", auth.Perm("Keys", "Update"), s.updateKey)
	r.Delete("/providers/:provider/keys/:key_id", auth.Perm("Keys", "Delete"), s.deleteKey)

	r.Get("/keys", auth.Perm("Keys", "View"), s.allKeys)
}

func (s *Service) listProviders(c *fiber.Ctx) error {
	limit, offset, e := listing.Page(c, listing.MaxLimit)
	if e != nil {
		return e
	}
	all := s.Providers()
	out := listing.Window(all, limit, offset)
	red := make([]Provider, len(out))
	for i, p := range out {
		red[i] = p.Redacted()
	}
	return c.JSON(fiber.Map{"providers": red, "count": len(red), "total_count": len(all), "limit": limit, "offset": offset})
}

// providerParam validates the :provider path parameter and returns the
// configured provider.
func (s *Service) providerParam(c *fiber.Ctx) (Provider, *apierr.Error) {
	name := c.Params("provider")
	if e := validName(name); e != nil {
		return Provider{}, e
	}
	p, ok := s.Provider(name)
	if !ok {
		return Provider{}, apierr.NotFound("provider", name)
	}
	return p, nil
}

func (s *Service) getProvider(c *fiber.Ctx) error {
	p, e := s.providerParam(c)
	if e != nil {
		return e
	}
	return c.JSON(p.Redacted())
}

// providerSecretPaths lists the secret-capable paths of a provider body.
func providerSecretPaths() []string { return []string{"proxy_config.password"} }

func (s *Service) createProvider(c *fiber.Ctx) error {
	var p Provider
	if e := decodeBody(c.Body(), &p, providerSecretPaths()); e != nil {
		return e
	}
	out, err := s.CreateProvider(c.UserContext(), p)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(out.Redacted())
}

func (s *Service) updateProvider(c *fiber.Ctx) error {
	cur, e := s.providerParam(c)
	if e != nil {
		return e
	}
	var p Provider
	if e := decodeBody(c.Body(), &p, providerSecretPaths()); e != nil {
		return e
	}
	out, err := s.UpdateProvider(c.UserContext(), cur.Name, p)
	if err != nil {
		return err
	}
	return c.JSON(out.Redacted())
}

func (s *Service) deleteProvider(c *fiber.Ctx) error {
	p, e := s.providerParam(c)
	if e != nil {
		return e
	}
	if err := s.DeleteProvider(c.UserContext(), p.Name); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"status": "success", "message": fmt.Sprintf("provider %s and its keys deleted", p.Name)})
}

func (s *Service) listKeys(c *fiber.Ctx) error {
	p, e := s.providerParam(c)
	if e != nil {
		return e
	}
	limit, offset, e := listing.Page(c, listing.MaxLimit)
	if e != nil {
		return e
	}
	out := listing.Window(p.Keys, limit, offset)
	red := make([]Key, len(out))
	for i, k := range out {
		red[i] = k.Redacted()
	}
	return c.JSON(fiber.Map{"keys": red, "count": len(red), "total_count": len(p.Keys), "limit": limit, "offset": offset})
}

func (s *Service) getKey(c *fiber.Ctx) error {
	p, e := s.providerParam(c)
	if e != nil {
		return e
	}
	k, ok := s.Key(p.Name, c.Params("key_id"))
	if !ok {
		return apierr.NotFound("key", c.Params("key_id"))
	}
	return c.JSON(k.Redacted())
}

func (s *Service) createKey(c *fiber.Ctx) error {
	p, e := s.providerParam(c)
	if e != nil {
		return e
	}
	var in keyInput
	if e := decodeBody(c.Body(), &in, keySecretPaths()); e != nil {
		return e
	}
	k, err := s.CreateKey(c.UserContext(), p.Name, in.toKey())
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(k.Redacted())
}

func (s *Service) updateKey(c *fiber.Ctx) error {
	p, e := s.providerParam(c)
	if e != nil {
		return e
	}
	var in keyInput
	if e := decodeBody(c.Body(), &in, keySecretPaths()); e != nil {
		return e
	}
	k, err := s.UpdateKey(c.UserContext(), p.Name, c.Params("key_id"), in.toKey())
	if err != nil {
		return err
	}
	return c.JSON(k.Redacted())
}

func (s *Service) deleteKey(c *fiber.Ctx) error {
	p, e := s.providerParam(c)
	if e != nil {
		return e
	}
	id := c.Params("key_id")
	if err := s.DeleteKey(c.UserContext(), p.Name, id); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"status": "success", "message": fmt.Sprintf("key %s of provider %s deleted", id, p.Name)})
}

// allKeys answers GET /api/keys with a bare array, as the spec fixes.
func (s *Service) allKeys(c *fiber.Ctx) error {
	keys := s.AllKeys()
	out := make([]Key, len(keys))
	for i, k := range keys {
		out[i] = k.Redacted()
	}
	return c.JSON(out)
}
