//! `--plot`: ns per message against M, one line per backend (and per other transport), one
//! panel per O, as SVG.
//!
//! Written by hand: the picture is a few lines and axes, and an SVG is text any browser shows.
//! Each point is a cell's median with a bar from its fastest to its slowest repetition.

use crate::records::{Cell, Results};
use std::fmt::Write;

const PANEL_W: f64 = 420.0;
const PANEL_H: f64 = 300.0;
/// Space inside a panel for the axis labels (left, right, top, bottom).
const PAD: (f64, f64, f64, f64) = (70.0, 20.0, 40.0, 50.0);
const PANELS_PER_ROW: usize = 3;
const LEGEND_H: f64 = 30.0;
const COLORS: &[&str] = &[
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
];

/// The SVG document for `r`.
pub(crate) fn svg(r: &Results) -> String {
    let p = &r.params;
    let panels = p.nbuf.len();
    let cols = panels.clamp(1, PANELS_PER_ROW);
    let rows = panels.div_ceil(PANELS_PER_ROW).max(1);
    let (w, h) = (cols as f64 * PANEL_W, rows as f64 * PANEL_H + LEGEND_H);
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" \
         viewBox=\"0 0 {w} {h}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    );
    // Legend: one swatch per series.
    let mut x = 10.0;
    for (i, lock) in r.series().iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let _ = writeln!(
            s,
            "<line x1=\"{x}\" y1=\"15\" x2=\"{}\" y2=\"15\" stroke=\"{color}\" stroke-width=\"2\"/>\
             <text x=\"{}\" y=\"19\">{}</text>",
            x + 20.0,
            x + 25.0,
            escape(lock)
        );
        x += 35.0 + 7.0 * lock.chars().count() as f64;
    }
    let _ = writeln!(
        s,
        "<text x=\"{}\" y=\"19\" text-anchor=\"end\" fill=\"#555\">N={} per sender, median and \
         range of {} reps</text>",
        w - 10.0,
        p.per_sender,
        p.reps
    );
    for (k, &o) in p.nbuf.iter().enumerate() {
        let (ox, oy) = (
            (k % PANELS_PER_ROW) as f64 * PANEL_W,
            LEGEND_H + (k / PANELS_PER_ROW) as f64 * PANEL_H,
        );
        panel(&mut s, r, o, ox, oy);
    }
    s += "</svg>\n";
    s
}

fn panel(s: &mut String, r: &Results, o: u64, ox: f64, oy: f64) {
    // Cells come in groups of one per series, in `series()` order: position, not name, says
    // whose a cell is (`--compare A,A` has two sides of one name).
    let series = r.series();
    let nlocks = series.len().max(1);
    let cells: Vec<(usize, &Cell)> = r
        .cells
        .iter()
        .enumerate()
        .filter(|(_, c)| c.nbuf == o)
        .map(|(j, c)| (j % nlocks, c))
        .collect();
    let (left, right, top, bottom) = PAD;
    let (x0, x1) = (ox + left, ox + PANEL_W - right);
    let (y0, y1) = (oy + PANEL_H - bottom, oy + top);
    let ms = &r.params.senders;
    let (mlo, mhi) = (
        ms.iter().copied().min().unwrap_or(1) as f64,
        ms.iter().copied().max().unwrap_or(1) as f64,
    );
    let xs = |m: f64| {
        if mhi > mlo {
            x0 + (m - mlo) / (mhi - mlo) * (x1 - x0)
        } else {
            (x0 + x1) / 2.0
        }
    };
    // Logarithmic: backends differ by up to 100x (a futex sleep against a yield), and a linear
    // axis would flatten every fast line onto zero.
    let (ymin, ymax) = cells
        .iter()
        .map(|(_, c)| &c.summary.ns_per_msg)
        .fold((f64::INFINITY, 0.0f64), |(lo, hi), sp| {
            (lo.min(sp.min), hi.max(sp.max))
        });
    let (lo, hi) = decades(ymin, ymax);
    let ys = |v: f64| {
        let v = v.clamp(lo, hi);
        y0 - (v.log10() - lo.log10()) / (hi.log10() - lo.log10()) * (y0 - y1)
    };

    let _ = writeln!(
        s,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-weight=\"bold\">O = {o}</text>",
        (x0 + x1) / 2.0,
        oy + top - 15.0
    );
    // Axes, grid and tick labels.
    let _ = writeln!(
        s,
        "<path d=\"M{x0},{y1} V{y0} H{x1}\" fill=\"none\" stroke=\"black\"/>"
    );
    for v in log_ticks(lo, hi) {
        let y = ys(v);
        let _ = writeln!(
            s,
            "<line x1=\"{x0}\" y1=\"{y}\" x2=\"{x1}\" y2=\"{y}\" stroke=\"#ddd\"/>\
             <text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
            x0 - 5.0,
            y + 4.0,
            tick_label(v)
        );
    }
    for &m in ms {
        let x = xs(m as f64);
        let _ = writeln!(
            s,
            "<line x1=\"{x}\" y1=\"{y0}\" x2=\"{x}\" y2=\"{}\" stroke=\"black\"/>\
             <text x=\"{x}\" y=\"{}\" text-anchor=\"middle\">{m}</text>",
            y0 + 4.0,
            y0 + 17.0
        );
    }
    let _ = writeln!(
        s,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">M (senders)</text>\n\
         <text transform=\"translate({},{}) rotate(-90)\" text-anchor=\"middle\">\
         ns per message (log scale)</text>",
        (x0 + x1) / 2.0,
        y0 + 38.0,
        ox + 18.0,
        (y0 + y1) / 2.0
    );
    // One line per series, in M order, with min–max bars.
    for (i, lock) in series.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let mut line: Vec<&Cell> = cells
            .iter()
            .filter(|(k, _)| *k == i)
            .map(|(_, c)| *c)
            .collect();
        line.sort_by_key(|c| c.senders);
        let points: Vec<String> = line
            .iter()
            .map(|c| {
                format!(
                    "{:.1},{:.1}",
                    xs(c.senders as f64),
                    ys(c.summary.ns_per_msg.median)
                )
            })
            .collect();
        let _ = writeln!(
            s,
            "<polyline points=\"{}\" fill=\"none\" stroke=\"{color}\" stroke-width=\"2\"/>",
            points.join(" ")
        );
        for c in line {
            let (x, sp) = (xs(c.senders as f64), &c.summary.ns_per_msg);
            let _ = writeln!(
                s,
                "<line x1=\"{x:.1}\" y1=\"{:.1}\" x2=\"{x:.1}\" y2=\"{:.1}\" stroke=\"{color}\"/>\
                 <circle cx=\"{x:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"{color}\">\
                 <title>{} O={o} M={}: {} ns/msg</title></circle>",
                ys(sp.min),
                ys(sp.max),
                ys(sp.median),
                escape(lock),
                c.senders,
                crate::report::sig(sp.median)
            );
        }
    }
}

/// The powers of ten just below `min` and just above `max` (1 and 10 for no data).
fn decades(min: f64, max: f64) -> (f64, f64) {
    if !(min > 0.0 && max >= min && max.is_finite()) {
        return (1.0, 10.0);
    }
    let lo = 10f64.powf(min.log10().floor());
    let hi = 10f64.powf(max.log10().ceil()).max(lo * 10.0);
    (lo, hi)
}

/// Ticks from `lo` to `hi` (powers of ten): 1, 2 and 5 per decade when there are few decades,
/// the decades alone otherwise.
fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let decades = (hi / lo).log10().round() as i32;
    let steps: &[f64] = if decades <= 3 {
        &[1.0, 2.0, 5.0]
    } else {
        &[1.0]
    };
    let mut ticks: Vec<f64> = (0..decades)
        .flat_map(|d| steps.iter().map(move |f| f * lo * 10f64.powi(d)))
        .collect();
    ticks.push(hi);
    ticks
}

/// A tick value without trailing zeros: 0, 0.5, 20, 1500.
fn tick_label(v: f64) -> String {
    let s = crate::report::sig(v);
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// Escapes text for SVG.
fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_axis() {
        assert_eq!(decades(88.0, 5260.0), (10.0, 10000.0));
        assert_eq!(decades(100.0, 100.0), (100.0, 1000.0));
        assert_eq!(decades(f64::INFINITY, 0.0), (1.0, 10.0));
        assert_eq!(
            log_ticks(10.0, 1000.0),
            [10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0]
        );
        assert_eq!(
            log_ticks(1.0, 1e5),
            [1.0, 10.0, 100.0, 1000.0, 10000.0, 100000.0]
        );
    }

    #[test]
    fn tick_labels() {
        assert_eq!(tick_label(0.0), "0");
        assert_eq!(tick_label(2000.0), "2000");
        assert_eq!(tick_label(20.0), "20");
        assert_eq!(tick_label(0.5), "0.5");
        assert_eq!(tick_label(2.5), "2.5");
    }

    #[test]
    fn escapes() {
        assert_eq!(escape("a<b&\"c\""), "a&lt;b&amp;&quot;c&quot;");
    }
}
