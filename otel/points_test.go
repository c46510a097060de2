package redlockotel_test

import (
	"fmt"
	"slices"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// points are the collected data points, one line each, sorted: the
// instrument, its unit, the attributes, and the sum or the count of
// recordings.
func points(rm metricdata.ResourceMetrics) []string {
	var lines []string
	line := func(m metricdata.Metrics, set attribute.Set, v string) {
		lines = append(lines, fmt.Sprintf("%s (%s) {%s}: %s", m.Name, m.Unit, set.Encoded(attribute.DefaultEncoder()), v))
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					line(m, p.Attributes, fmt.Sprint(p.Value))
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					line(m, p.Attributes, fmt.Sprintf("%d recorded", p.Count))
				}
			}
		}
	}
	slices.Sort(lines)
	return lines
}
