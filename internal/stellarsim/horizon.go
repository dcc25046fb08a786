package stellarsim

import "net/http"

func (n *Network) horizonRoutes(mux *http.ServeMux) {}
