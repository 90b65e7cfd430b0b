package governance

import "github.com/wasmgate/gateway/host/auth"

// Routes registers the management API. The quota route authenticates the
// caller's virtual key itself: management credentials are refused there.
func (s *Service) Routes(api *auth.Router) {
	vkView, vkCreate := auth.Perm("VirtualKeys", "View"), auth.Perm("VirtualKeys", "Create")
	vkUpd, vkDel := auth.Perm("VirtualKeys", "Update"), auth.Perm("VirtualKeys", "Delete")
	// Registered before /virtual-keys/:id so "quota" is not taken for an id.
	api.HandleCustom("GET", "/governance/virtual-keys/quota", "virtual_key", s.quota)
	api.Get("/governance/virtual-keys", vkView, s.listVirtualKeys)
	api.Post("/governance/virtual-keys", vkCreate, s.createVirtualKey)
	api.Get("/governance/virtual-keys/:id", vkView, s.getVirtualKey)
	api.Put("/governance/virtual-keys/:id", vkUpd, s.updateVirtualKey)
	api.Delete("/governance/virtual-keys/:id", vkDel, s.deleteVirtualKey)

	tView, tCreate := auth.Perm("Teams", "View"), auth.Perm("Teams", "Create")
	tUpd, tDel := auth.Perm("Teams", "Update"), auth.Perm("Teams", "Delete")
	api.Get("/governance/teams", tView, s.listTeams)
	api.Post("/governance/teams", tCreate, s.createTeam)
	api.Get("/governance/teams/:id", tView, s.getTeamHandler)
	api.Put("/governance/teams/:id", tUpd, s.updateTeam)
	api.Delete("/governance/teams/:id", tDel, s.deleteTeam)
	api.Delete("/teams/:id/customers/:customerId", tUpd, s.detachCustomer)

	cView, cCreate := auth.Perm("Customers", "View"), auth.Perm("Customers", "Create")
	cUpd, cDel := auth.Perm("Customers", "Update"), auth.Perm("Customers", "Delete")
	api.Get("/governance/customers", cView, s.listCustomers)
	api.Post("/governance/customers", cCreate, s.createCustomer)
	api.Get("/governance/customers/:id", cView, s.getCustomer)
	api.Put("/governance/customers/:id", cUpd, s.updateCustomer)
	api.Delete("/governance/customers/:id", cDel, s.deleteCustomer)
}
