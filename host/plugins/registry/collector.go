package registry

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/wasmgate/gateway/host/plugins"
)

// Collector exposes per-plugin call counts, errors and latency quantiles
// as Prometheus series. It reads the Manager's statistics when scraped, so
// the hot path only updates the counters it already keeps.
type Collector struct {
	m         *plugins.Manager
	calls     *prometheus.Desc
	errors    *prometheus.Desc
	latency   *prometheus.Desc
	up        *prometheus.Desc
	instances *prometheus.Desc
}

// NewCollector returns a collector over m's plugins.
func NewCollector(m *plugins.Manager) *Collector {
	labels := []string{"plugin", "runtime", "kind"}
	return &Collector{
		m:     m,
		calls: prometheus.NewDesc("wasmgate_plugin_calls_total", "Hook calls per plugin.", labels, nil),
		errors: prometheus.NewDesc("wasmgate_plugin_errors_total",
			"Hook calls per plugin that failed or rejected.", labels, nil),
		latency: prometheus.NewDesc("wasmgate_plugin_call_duration_seconds",
			"Hook call latency quantiles per plugin over its recent calls.", labels, nil),
		up: prometheus.NewDesc("wasmgate_plugin_loaded", "1 when the plugin is loaded and serving.", labels, nil),
		instances: prometheus.NewDesc("wasmgate_plugin_instances",
			"Instances a wasm plugin holds now (0 while unloaded for idleness).", labels, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.calls
	ch <- c.errors
	ch <- c.latency
	ch <- c.up
	ch <- c.instances
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	for _, st := range c.m.List() {
		lv := []string{st.Name, string(st.Runtime), st.Kind}
		ch <- prometheus.MustNewConstMetric(c.calls, prometheus.CounterValue, float64(st.Calls), lv...)
		ch <- prometheus.MustNewConstMetric(c.errors, prometheus.CounterValue, float64(st.Errors), lv...)
		up := 0.0
		if st.State == plugins.StateLoaded {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, up, lv...)
		if st.Instances != nil {
			ch <- prometheus.MustNewConstMetric(c.instances, prometheus.GaugeValue, float64(*st.Instances), lv...)
		}
		ch <- prometheus.MustNewConstSummary(c.latency, st.Calls, st.Total.Seconds(), map[float64]float64{
			0.5: st.P50.Seconds(), 0.95: st.P95.Seconds(), 0.99: st.P99.Seconds(),
		}, lv...)
	}
}
