package main

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/redlockgo/redlock/bench/cmd/lockbench/stats"
)

// palette has a color for each library (Tableau 10).
var palette = []color.Color{
	color.RGBA{0x4e, 0x79, 0xa7, 0xff}, color.RGBA{0xf2, 0x8e, 0x2b, 0xff}, color.RGBA{0xe1, 0x57, 0x59, 0xff},
	color.RGBA{0x76, 0xb7, 0xb2, 0xff}, color.RGBA{0x59, 0xa1, 0x4f, 0xff}, color.RGBA{0xed, 0xc9, 0x48, 0xff},
	color.RGBA{0xb0, 0x7a, 0xa1, 0xff}, color.RGBA{0xff, 0x9d, 0xa7, 0xff}, color.RGBA{0x9c, 0x75, 0x5f, 0xff},
	color.RGBA{0xba, 0xb0, 0xac, 0xff},
}

func colorOf(i int) color.Color { return palette[i%len(palette)] }

// series is one library's samples, pooled over the repetitions.
type series struct {
	name string
	ds   []time.Duration
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// cdfChart draws the distribution of each series as a CDF on a log scale
// of milliseconds.
func cdfChart(file, title, xlabel string, ss []series) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xlabel
	p.Y.Label.Text = "fraction of acquisitions"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Y.Min, p.Y.Max = 0, 1
	p.Legend.Top, p.Legend.Left = true, true // in the gap between the barging and the queued
	p.Legend.XOffs, p.Legend.YOffs = 2.2*vg.Inch, -2.6*vg.Inch
	for i, s := range ss {
		if len(s.ds) == 0 {
			continue
		}
		d := slices.Clone(s.ds)
		slices.Sort(d)
		step := max(1, len(d)/400)
		var pts plotter.XYs
		for j := 0; j < len(d); j += step {
			pts = append(pts, plotter.XY{X: math.Max(msOf(d[j]), 0.01), Y: float64(j+1) / float64(len(d))})
		}
		pts = append(pts, plotter.XY{X: math.Max(msOf(d[len(d)-1]), 0.01), Y: 1})
		l, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		l.Color = colorOf(i)
		if !strings.HasPrefix(s.name, "redlock ") { // the peers dashed
			l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		}
		l.Width = vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(s.name, l)
	}
	p.Add(plotter.NewGrid())
	return p.Save(9*vg.Inch, 6*vg.Inch, file)
}

// histGrid draws a histogram per series on common bins, spaced evenly on
// a log scale of milliseconds from 0.1 ms to the largest sample: the
// height of a bar is the fraction of the series' samples in it.
func histGrid(file, xlabel string, ss []series) error {
	const lo, bins = 0.1, 48
	hi := 1.0
	for _, s := range ss {
		hi = math.Max(hi, msOf(stats.Percentile(s.ds, 100)))
	}
	ratio := math.Pow(hi/lo, 1.0/bins)
	const cols = 2
	rows := (len(ss) + cols - 1) / cols
	plots := make([][]*plot.Plot, rows)
	for i := range plots {
		plots[i] = make([]*plot.Plot, cols)
	}
	for i, s := range ss {
		p := plot.New()
		p.Title.Text = s.name
		p.X.Label.Text = xlabel
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
		p.X.Min, p.X.Max = lo, hi
		h := &plotter.Histogram{FillColor: colorOf(i), LineStyle: plotter.DefaultLineStyle}
		h.LineStyle.Width = vg.Points(0.3)
		for b := range bins {
			h.Bins = append(h.Bins, plotter.HistogramBin{Min: lo * math.Pow(ratio, float64(b)), Max: lo * math.Pow(ratio, float64(b+1))})
		}
		for _, d := range s.ds {
			b := int(math.Log(math.Max(msOf(d), lo)/lo) / math.Log(ratio))
			h.Bins[min(b, bins-1)].Weight += 1 / float64(len(s.ds))
		}
		p.Add(h)
		plots[i/cols][i%cols] = p
	}
	img := vgimg.New(11*vg.Inch, vg.Length(rows)*2.4*vg.Inch)
	dc := draw.New(img)
	t := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 4,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	canvases := plot.Align(plots, t, dc)
	for j := range rows {
		for i := range cols {
			if plots[j][i] != nil {
				plots[j][i].Draw(canvases[j][i])
			}
		}
	}
	return savePNG(file, img)
}

// primitivesChart draws the median ops/s of each library in each primitive
// as grouped bars, a panel for one node and one for three.
func primitivesChart(file string, libs []library, runs [][]*run, d time.Duration) error {
	var names []string
	for _, p := range primitives {
		names = append(names, p.name)
	}
	var panels [][]*plot.Plot
	for _, nodes := range []int{1, 3} {
		p := plot.New()
		p.Title.Text = fmt.Sprintf("Throughput per primitive, %d Clients, %v hold, %s", primClients, primHold, map[int]string{1: "one node", 3: "three nodes"}[nodes])
		p.Y.Label.Text = "ops/s (median of the repetitions)"
		p.NominalX(names...)
		p.Legend.Top = true
		const width = 7
		top := 0.0
		for i, lib := range libs {
			if nodes > 1 && !lib.quorum {
				continue
			}
			ops := opsPerPrimitive(runs[i], nodes, d)
			top = max(top, slices.Max(ops))
			bars, err := plotter.NewBarChart(plotter.Values(ops), vg.Points(width))
			if err != nil {
				return err
			}
			bars.Color = colorOf(i)
			bars.LineStyle.Width = 0
			bars.Offset = vg.Points(width * (float64(i) - float64(len(libs)-1)/2))
			p.Add(bars)
			p.Legend.Add(lib.name, bars)
		}
		p.Y.Min, p.Y.Max = 0, 1.3*top // room for the legend
		p.Add(plotter.NewGrid())
		panels = append(panels, []*plot.Plot{p})
	}
	img := vgimg.New(12*vg.Inch, 10*vg.Inch)
	dc := draw.New(img)
	t := draw.Tiles{Rows: 2, Cols: 1, PadY: vg.Millimeter * 6, PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2,
		PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	canvases := plot.Align(panels, t, dc)
	for j := range panels {
		panels[j][0].Draw(canvases[j][0])
	}
	return savePNG(file, img)
}

func savePNG(file string, img *vgimg.Canvas) error {
	w, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(w); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}
