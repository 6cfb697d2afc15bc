//! Mean ± SE curves over rounds, one line and band per method, as SVG and PNG: the figures
//! of the paper suites.

use agora_core::Result;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;

/// Draw mean ± SE curves of one metric for several methods.
pub fn draw_curves<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    y_desc: &str,
    series: &[(String, Vec<f64>, Vec<f64>)],
) -> std::result::Result<(), String> {
    let n = series.iter().map(|s| s.1.len()).max().unwrap_or(1).max(2);
    let vals: Vec<f64> = series
        .iter()
        .flat_map(|s| s.1.iter().zip(&s.2).flat_map(|(m, e)| [m - e, m + e]))
        .filter(|v| v.is_finite())
        .collect();
    let (mut lo, mut hi) = vals
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| {
            (l.min(*v), h.max(*v))
        });
    if !(lo.is_finite() && hi.is_finite()) {
        (lo, hi) = (0.0, 1.0);
    }
    let pad = ((hi - lo) * 0.05).max(1e-9);
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(1f64..n as f64, (lo - pad)..(hi + pad))
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .x_desc("acquisition round")
        .y_desc(y_desc)
        // At most one label per round, so short runs do not repeat rounded labels.
        .x_labels((n.max(2) - 1).min(10))
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{y:.3}"))
        .draw()
        .map_err(|e| e.to_string())?;
    for (k, (name, m, se)) in series.iter().enumerate() {
        let color = agora_study::chart::TAB10[k % agora_study::chart::TAB10.len()].to_rgba();
        let pts = |sign: f64| -> Vec<(f64, f64)> {
            m.iter()
                .zip(se)
                .enumerate()
                .map(|(i, (a, e))| ((i + 1) as f64, a + sign * e))
                .collect()
        };
        let mut band = pts(1.0);
        band.extend(pts(-1.0).into_iter().rev());
        chart
            .draw_series(std::iter::once(Polygon::new(
                band,
                color.mix(0.15).filled(),
            )))
            .map_err(|e| e.to_string())?;
        chart
            .draw_series(LineSeries::new(pts(0.0), color.stroke_width(2)))
            .map_err(|e| e.to_string())?
            .label(name.clone())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
            });
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(|e| e.to_string())?;
    root.present().map_err(|e| e.to_string())?;
    Ok(())
}

/// Write `stem.svg` and `stem.png` of mean ± SE curves into `dir`; returns both names.
pub fn plot(
    dir: &Path,
    stem: &str,
    title: &str,
    y: &str,
    series: &[(String, Vec<f64>, Vec<f64>)],
) -> Result<Vec<String>> {
    let err =
        |f: &str, e: String| agora_core::Error::invalid("out", format!("cannot write {f}: {e}"));
    let svg = format!("{stem}.svg");
    agora_study::chart::ensure_fonts();
    {
        let path = dir.join(&svg);
        let root = SVGBackend::new(&path, (800, 500)).into_drawing_area();
        draw_curves(&root, title, y, series).map_err(|e| err(&svg, e))?;
    }
    let png = agora_study::chart::render(dir, stem, |root| draw_curves(root, title, y, series))?;
    Ok(vec![svg, png])
}

/// One line per method through `(x, y)` points (e.g. mean vote cost against mean cumulative
/// regret, round by round).
pub fn draw_xy<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    axes: (&str, &str),
    series: &[(String, Vec<(f64, f64)>)],
) -> std::result::Result<(), String> {
    let pts = series
        .iter()
        .flat_map(|s| s.1.iter())
        .filter(|p| p.0.is_finite() && p.1.is_finite());
    let (mut x0, mut x1, mut y0, mut y1) = (
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::INFINITY,
        f64::NEG_INFINITY,
    );
    for p in pts {
        (x0, x1, y0, y1) = (x0.min(p.0), x1.max(p.0), y0.min(p.1), y1.max(p.1));
    }
    if !(x0.is_finite() && y0.is_finite()) {
        (x0, x1, y0, y1) = (0.0, 1.0, 0.0, 1.0);
    }
    let (px, py) = (((x1 - x0) * 0.05).max(1e-9), ((y1 - y0) * 0.05).max(1e-9));
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d((x0 - px)..(x1 + px), (y0 - py)..(y1 + py))
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .x_desc(axes.0)
        .y_desc(axes.1)
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{y:.2}"))
        .draw()
        .map_err(|e| e.to_string())?;
    for (k, (name, p)) in series.iter().enumerate() {
        let color = agora_study::chart::TAB10[k % agora_study::chart::TAB10.len()].to_rgba();
        chart
            .draw_series(LineSeries::new(p.iter().copied(), color.stroke_width(2)))
            .map_err(|e| e.to_string())?
            .label(name.clone())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
            });
        if let Some(last) = p.last() {
            chart
                .draw_series(std::iter::once(Circle::new(*last, 4, color.filled())))
                .map_err(|e| e.to_string())?;
        }
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(|e| e.to_string())?;
    root.present().map_err(|e| e.to_string())?;
    Ok(())
}

/// Write `stem.svg` and `stem.png` of [`draw_xy`] lines into `dir`; returns both names.
pub fn plot_xy(
    dir: &Path,
    stem: &str,
    title: &str,
    axes: (&str, &str),
    series: &[(String, Vec<(f64, f64)>)],
) -> Result<Vec<String>> {
    let err =
        |f: &str, e: String| agora_core::Error::invalid("out", format!("cannot write {f}: {e}"));
    let svg = format!("{stem}.svg");
    agora_study::chart::ensure_fonts();
    {
        let path = dir.join(&svg);
        let root = SVGBackend::new(&path, (800, 500)).into_drawing_area();
        draw_xy(&root, title, axes, series).map_err(|e| err(&svg, e))?;
    }
    let png = agora_study::chart::render(dir, stem, |root| draw_xy(root, title, axes, series))?;
    Ok(vec![svg, png])
}
