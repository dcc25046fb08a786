package stellarsim

import (
	"net/http"
)

// problem is Horizon's problem+json error body.
type problem struct {
	Type   string         `json:"type"`
	Title  string         `json:"title"`
	Status int            `json:"status"`
	Detail string         `json:"detail,omitempty"`
	Extras map[string]any `json:"extras,omitempty"`
}

func writeProblem(w http.ResponseWriter, p problem) {
	p.Type = "https://stellar.org/horizon-errors/" + p.Type
	w.Header().Set("Content-Type", "application/problem+json; charset=utf-8")
	writeJSONTyped(w, p.Status, p)
}

func (n *Network) horizonRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /friendbot", n.serveFriendbot)
	mux.HandleFunc("GET /friendbot/", n.serveFriendbot)
	mux.HandleFunc("POST /friendbot", n.serveFriendbot)
}
