package governance

import (
	"errors"
	"net/http"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/host/listing"
	"github.com/wasmgate/gateway/store"
)

type customerInput struct {
	Name        string     `json:"name"`
	Description string     `json:"description"`
	Budget      *Budget    `json:"budget"`
	RateLimit   *RateLimit `json:"rate_limit"`
}

type customerUpdate struct {
	Name        opt[string]    `json:"name"`
	Description opt[string]    `json:"description"`
	Budget      opt[Budget]    `json:"budget"`
	RateLimit   opt[RateLimit] `json:"rate_limit"`
}

func (s *Service) createCustomer(c *fiber.Ctx) error {
	var in customerInput
	if e := apierr.DecodeJSON(c.Body(), &in); e != nil {
		return e
	}
	if e := firstErr(validName("name", in.Name), in.Budget.validate("budget"), in.RateLimit.validate("rate_limit")); e != nil {
		return e
	}
	now := s.now().UTC()
	cu := Customer{ID: uuid.Must(uuid.NewV7()).String(), Name: strings.TrimSpace(in.Name), Description: in.Description,
		Budget: in.Budget, RateLimit: in.RateLimit, CreatedAt: now, UpdatedAt: now}
	if err := s.st.Update(c.UserContext(), func(tx store.Tx) error { return store.PutJSON(tx, nsCustomers, cu.ID, cu) }); err != nil {
		return apierr.Internal(err)
	}
	_ = s.refreshAfterWrite(c.UserContext())
	return c.Status(http.StatusCreated).JSON(fiber.Map{"customer": cu})
}

func (s *Service) listCustomers(c *fiber.Ctx) error {
	limit, offset, e := listing.Page(c, listing.MaxLimit)
	if e != nil {
		return e
	}
	var all []Customer
	err := s.st.View(c.UserContext(), func(tx store.Tx) error {
		var err error
		all, err = store.ListJSON[Customer](tx, nsCustomers, store.ScanOptions{})
		return err
	})
	if err != nil {
		return apierr.Internal(err)
	}
	page := listing.Window(all, limit, offset)
	return c.JSON(fiber.Map{"customers": page, "count": len(page), "total_count": len(all), "limit": limit, "offset": offset})
}

func (s *Service) getCustomer(c *fiber.Ctx) error {
	id := c.Params("id")
	var cu Customer
	err := s.st.View(c.UserContext(), func(tx store.Tx) error {
		var err error
		cu, err = store.GetJSON[Customer](tx, nsCustomers, id)
		return err
	})
	if err != nil {
		return storeErr(err, "customer", id)
	}
	return c.JSON(fiber.Map{"customer": cu})
}

func (s *Service) updateCustomer(c *fiber.Ctx) error {
	id := c.Params("id")
	var in customerUpdate
	if e := apierr.DecodeJSON(c.Body(), &in); e != nil {
		return e
	}
	var cu Customer
	err := s.st.Update(c.UserContext(), func(tx store.Tx) error {
		var err error
		if cu, err = store.GetJSON[Customer](tx, nsCustomers, id); err != nil {
			return err
		}
		if in.Name.Set {
			if e := validName("name", deref(in.Name.V)); e != nil {
				return e
			}
			cu.Name = strings.TrimSpace(*in.Name.V)
		}
		if in.Description.Set {
			cu.Description = deref(in.Description.V)
		}
		if in.Budget.Set {
			if e := in.Budget.V.validate("budget"); e != nil {
				return e
			}
			cu.Budget = in.Budget.V
		}
		if in.RateLimit.Set {
			if e := in.RateLimit.V.validate("rate_limit"); e != nil {
				return e
			}
			cu.RateLimit = in.RateLimit.V
		}
		cu.UpdatedAt = s.now().UTC()
		return store.PutJSON(tx, nsCustomers, id, cu)
	})
	if err != nil {
		return storeErr(err, "customer", id)
	}
	_ = s.refreshAfterWrite(c.UserContext())
	return c.JSON(fiber.Map{"customer": cu})
}

func (s *Service) deleteCustomer(c *fiber.Ctx) error {
	id := c.Params("id")
	err := s.st.Update(c.UserContext(), func(tx store.Tx) error {
		if _, err := tx.Get(nsCustomers, id); err != nil {
			return err
		}
		// A budget parent in use cannot go: its children's spend would
		// silently stop counting against anything.
		var users []string
		if err := scanAll[Team](tx, nsTeams, func(t Team) {
			if t.CustomerID == id {
				users = append(users, "team "+t.ID)
			}
		}); err != nil {
			return err
		}
		if err := scanAll[VirtualKey](tx, nsVirtualKeys, func(v VirtualKey) {
			if v.CustomerID == id {
				users = append(users, "virtual key "+v.ID)
			}
		}); err != nil {
			return err
		}
		if len(users) > 0 {
			return apierr.Conflict("customer_in_use", "customer "+id+" is the budget parent of "+strings.Join(users, ", "))
		}
		// Drop its many-to-many associations too.
		var assoc []string
		err := tx.Scan(nsTeamCustomers, store.ScanOptions{}, func(k string, _ []byte) error {
			if strings.HasSuffix(k, "/"+id) {
				assoc = append(assoc, k)
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, k := range assoc {
			if err := tx.Delete(nsTeamCustomers, k); err != nil {
				return err
			}
		}
		return tx.Delete(nsCustomers, id)
	})
	if err != nil {
		return storeErr(err, "customer", id)
	}
	_ = s.counters.Delete(c.UserContext(), "customer/"+id+"/")
	_ = s.refreshAfterWrite(c.UserContext())
	return c.JSON(fiber.Map{"status": "success", "message": "customer deleted"})
}

// scanAll decodes every record of ns and hands it to fn.
func scanAll[T any](tx store.Tx, ns string, fn func(T)) error {
	xs, err := store.ListJSON[T](tx, ns, store.ScanOptions{})
	for _, x := range xs {
		fn(x)
	}
	return err
}

// storeErr maps store and validation failures to envelopes.
func storeErr(err error, what, id string) *apierr.Error {
	var ae *apierr.Error
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.Is(err, store.ErrNotFound):
		return apierr.NotFound(what, id)
	}
	return apierr.Internal(err)
}

func firstErr(es ...*apierr.Error) *apierr.Error {
	for _, e := range es {
		if e != nil {
			return e
		}
	}
	return nil
}

func deref[T any](p *T) T {
	var z T
	if p == nil {
		return z
	}
	return *p
}
