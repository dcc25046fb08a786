package stellarsim

import "net/http"

func (n *Network) adminRoutes(mux *http.ServeMux) {}
