package controlplane

// intentsAPI is the intents area of the API: submitting an intent, reading
// it and its output, listing intents, the tool list and the stop buttons.
// Its handlers are in api.go, intentlist.go, outputapi.go and cancel.go, its
// admission in admission.go.
type intentsAPI struct{ srv *Server }

// routes registers the intents area. The stop buttons (an intent, or a run)
// are authorized as a signed read of the intent's tenant (its orchestrator
// key signs the method and path) or by the admin token; an intent of another
// tenant is not found, exactly as one that does not exist.
func (ep intentsAPI) routes(mux *routeMux) {
	mux.HandleFunc("POST /v1/intents", ep.handleSubmit)
	mux.HandleFunc("GET /v1/intents", ep.handleListIntents)
	mux.HandleFunc("GET /v1/intents/{id}", ep.handleGetIntent)
	mux.HandleFunc("GET /v1/intents/{id}/output", ep.handleGetOutput)
	mux.HandleFunc("POST /v1/intents/{id}/cancel", ep.handleCancelIntent)
	mux.HandleFunc("POST /v1/tenants/{tenant}/runs/{run}/cancel", ep.handleCancelRun)
	mux.HandleFunc("GET /v1/tools", ep.handleTools)
}
