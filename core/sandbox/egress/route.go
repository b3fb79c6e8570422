package egress

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strings"
)

// RoutePrefix starts the path of every model route: the agent's base URL
// is INSIDE/vibeteam/model/NAME.
const RoutePrefix = "/vibeteam/model/"

// Route is a model API reached through the proxy, which adds the real key.
// Requests to RoutePrefix+Name+"/REST" go to Upstream+"/REST".
type Route struct {
	Name     string // a path segment: letters, digits, '-', '_', '.'
	Upstream string // the real base URL: scheme://host[:port][/path]
	// Header carries the key ("x-api-key", "Authorization",
	// "x-goog-api-key"), with Scheme before it ("Bearer ").
	Header string
	Scheme string
	// QueryParam, when the client sent the key in the URL instead
	// (Gemini's ?key=), is replaced there too.
	QueryParam string
	// Key is the real credential. It never leaves the proxy but towards
	// Upstream, and is never printed (String hides it, JSON omits it).
	Key string `json:"-"`
	// Placeholder is what the agent holds instead of Key.
	Placeholder string
}

// String names the route without its key.
func (r Route) String() string {
	return fmt.Sprintf("%s%s -> %s (%s)", RoutePrefix, r.Name, r.Upstream, r.Header)
}

// GoString keeps the key out of %#v too.
func (r Route) GoString() string { return "egress.Route{" + r.String() + "}" }

var routeName = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

type routeProxy struct {
	Route
	*httputil.ReverseProxy
}

// AddRoutes adds model routes to a running proxy (a session's proxy gets
// each adapter's routes as its tasks start). A route already there with
// the same settings is kept; another one under the same name is an error.
func (p *Proxy) AddRoutes(routes ...Route) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	added := map[string]*routeProxy{}
	for _, r := range routes {
		have := p.routes[r.Name]
		if have == nil {
			have = added[r.Name]
		}
		if have != nil {
			if have.Route != r {
				return fmt.Errorf("model route %q given twice, differently", r.Name)
			}
			continue
		}
		rp, err := p.newRoute(r)
		if err != nil {
			return err
		}
		added[r.Name] = rp
	}
	for name, rp := range added {
		p.routes[name] = rp
	}
	return nil
}

func (p *Proxy) newRoute(r Route) (*routeProxy, error) {
	if !routeName.MatchString(r.Name) {
		return nil, fmt.Errorf("model route %q: the name must be letters, digits, '-', '_' or '.'", r.Name)
	}
	up, err := url.Parse(r.Upstream)
	if err != nil || (up.Scheme != "http" && up.Scheme != "https") || up.Host == "" {
		return nil, fmt.Errorf("model route %q: upstream %q is not an http(s) URL", r.Name, r.Upstream)
	}
	if r.Header == "" || r.Key == "" {
		return nil, fmt.Errorf("model route %q: no header or key", r.Name)
	}
	rp := &routeProxy{Route: r}
	rp.ReverseProxy = &httputil.ReverseProxy{
		Rewrite:   rp.rewrite(up),
		Transport: p.routeTransport,
		// Server-sent events and every other body: bytes go out as they
		// come.
		FlushInterval: -1,
		BufferPool:    copyBuffers,
		ErrorHandler:  badGateway,
		ErrorLog:      discardLog,
	}
	return rp, nil
}

// rewrite sends the request to the upstream with the real key in place of
// whatever credential the client sent.
func (rp *routeProxy) rewrite(up *url.URL) func(*httputil.ProxyRequest) {
	return func(pr *httputil.ProxyRequest) {
		rest := strings.TrimPrefix(pr.In.URL.Path, RoutePrefix+rp.Name)
		out := pr.Out
		out.URL.Path, out.URL.RawPath = rest, ""
		pr.SetURL(up)
		out.Host = up.Host
		for _, h := range []string{"Authorization", "X-Api-Key", "X-Goog-Api-Key", "Proxy-Authorization", "Proxy-Connection"} {
			out.Header.Del(h)
		}
		out.Header.Set(rp.Header, rp.Scheme+rp.Key)
		if rp.QueryParam != "" {
			q := out.URL.Query()
			if q.Has(rp.QueryParam) {
				q.Set(rp.QueryParam, rp.Key)
				out.URL.RawQuery = q.Encode()
			}
		}
	}
}

// routeFor is the route a request names: an origin-form request with the
// route's path, or the same path in absolute form to a loopback host (a
// client that sends even its base URL through HTTP_PROXY, ignoring
// NO_PROXY).
func (p *Proxy) routeFor(r *http.Request) *routeProxy {
	name, ok := strings.CutPrefix(r.URL.Path, RoutePrefix)
	if !ok {
		return nil
	}
	if r.URL.Host != "" && !isLoopback(r.URL.Host) {
		return nil
	}
	name, _, _ = strings.Cut(name, "/")
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.routes[name]
}

func isLoopback(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	host = normHost(host)
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
