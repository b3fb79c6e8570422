package egress

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// benchWay is the whole way out of a sandbox, bridge included: TCP to the
// bridge, the unix socket, the proxy, the loopback upstream.
func benchWay(b *testing.B, upstream string) (inside string) {
	p, err := New(Config{Mode: ModeAll, Routes: []Route{{Name: "m", Upstream: upstream, Header: "x-api-key", Key: "real"}}})
	if err != nil {
		b.Fatal(err)
	}
	sock := filepath.Join(b.TempDir(), "e.sock")
	if err := p.ListenUnix(sock); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Close() })
	br, err := ListenBridge("127.0.0.1:0", sock)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { br.Close() })
	return InsideURL(br.Addr().String())
}

// p50 of n timed requests made by do, in milliseconds.
func p50(b *testing.B, n int, do func() error) float64 {
	ms := make([]float64, 0, n)
	for range n {
		start := time.Now()
		if err := do(); err != nil {
			b.Fatal(err)
		}
		ms = append(ms, float64(time.Since(start).Microseconds())/1000)
	}
	slices.Sort(ms)
	return ms[len(ms)/2]
}

func fetch(c *http.Client, method, u string) error {
	req, _ := http.NewRequest(method, u, strings.NewReader("{}"))
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return err
}

// BenchmarkProxyLatency is the p50 time of a small request to a loopback
// server, direct and through the bridge and the proxy: by a model route
// (the agent's API calls) and by absolute-URI forwarding (HTTP_PROXY), on
// kept-alive connections as the agents' clients keep them. Target: the
// proxy adds at most 2 ms at p50.
func BenchmarkProxyLatency(b *testing.B) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"ok":true}`)
	}))
	defer up.Close()
	inside := benchWay(b, up.URL)
	pu, _ := url.Parse(inside)
	direct := &http.Client{Transport: &http.Transport{}}
	proxied := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu)}}
	const n = 500
	var d, r, f float64
	for range b.N {
		d = p50(b, n, func() error { return fetch(direct, "POST", up.URL+"/v1/messages") })
		r = p50(b, n, func() error { return fetch(direct, "POST", inside+RoutePrefix+"m/v1/messages") })
		f = p50(b, n, func() error { return fetch(proxied, "GET", up.URL+"/x") })
	}
	b.ReportMetric(d, "direct-p50-ms")
	b.ReportMetric(r-d, "route-added-p50-ms")
	b.ReportMetric(f-d, "forward-added-p50-ms")
}

// BenchmarkProxyStream is the throughput of a streamed answer (server-sent
// events, flushed every 16 KB) through the bridge and a model route.
// Target: at least 50 MB/s.
func BenchmarkProxyStream(b *testing.B) {
	const total = 64 << 20
	chunk := []byte("data: " + strings.Repeat("x", 16<<10-8) + "\n\n")
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		for sent := 0; sent < total; sent += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
			fl.Flush()
		}
	}))
	defer up.Close()
	inside := benchWay(b, up.URL)
	c := &http.Client{Transport: &http.Transport{}}
	var mbps, directMBps float64
	for range b.N {
		for _, way := range []struct {
			u   string
			out *float64
		}{{up.URL + "/s", &directMBps}, {inside + RoutePrefix + "m/s", &mbps}} {
			start := time.Now()
			resp, err := c.Get(way.u)
			if err != nil {
				b.Fatal(err)
			}
			n, err := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err != nil || n < total {
				b.Fatalf("read %d bytes: %v", n, err)
			}
			*way.out = float64(n) / (1 << 20) / time.Since(start).Seconds()
		}
	}
	b.ReportMetric(directMBps, "direct-MB/s")
	b.ReportMetric(mbps, "proxied-MB/s")
}
