//! The facilitator's picture of a live study: progress on the left, the model's current
//! belief on the right (over a 1- or 2-D box, or a 2-D slice through the recommendation of
//! a larger one).
//!
//! Progress is the best value so far for evaluation studies (`bo`, `boap`), and the
//! answered rounds over time for comparison and vote studies (decisive comparisons and
//! "can't tell"s; public and private rounds), which shows a meeting's pace and how many
//! costly private ballots were used. The belief is [`Strategy::belief`]: mean ± 2 sd in 1-D,
//! a heatmap of the mean in 2-D, with the points told about, the options open now and the
//! recommendation marked; a group model's estimate of each person's utility is drawn beside
//! the welfare in 1-D. Strategies without a predictive model get a note instead.
//!
//! [`Strategy::belief`]: agora_methods::Strategy::belief

use super::spec::MethodSpec;
use super::store::EventKind;
use super::study::{Actor, LiveStudy, OptionView, StudyResult};
use agora_core::{AnswerKind, Channel, Error, Observation, Param, Point, QueryKind, Space};
use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use serde::Serialize;
use std::collections::BTreeMap;

/// Width and height of the figure in pixels.
pub const SIZE: (u32, u32) = (1000, 460);

/// Values drawn are clamped to this magnitude so axis spans stay finite.
const CLAMP: f64 = 1e300;

/// The study's figure as SVG text (what `agora plot` writes and the server serves).
pub fn plot_svg(study: &LiveStudy) -> StudyResult<String> {
    let fig = figure(study)?;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        draw(&root, &fig).map_err(drawing_error)?;
    }
    Ok(svg)
}

/// The study's figure as PNG bytes.
pub fn plot_png(study: &LiveStudy) -> StudyResult<Vec<u8>> {
    use image::ImageEncoder;
    let fig = figure(study)?;
    let (w, h) = SIZE;
    let mut rgb = vec![0u8; w as usize * h as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, SIZE).into_drawing_area();
        draw(&root, &fig).map_err(drawing_error)?;
    }
    let mut png = Vec::new();
    image::codecs::png::PngEncoder::new(&mut png)
        .write_image(&rgb, w, h, image::ColorType::Rgb8)
        .map_err(drawing_error)?;
    Ok(png)
}

/// What the model believes, as data (the API's `GET .../belief`): at the open query's
/// options and the recommendation, and over the figure's grid (1-D, 2-D, or a 2-D slice).
/// Group models add each person's estimated utility beside the welfare.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BeliefView {
    /// What the model is a belief about: `objective`, `utility` or `welfare`; `None` when
    /// the strategy has no model (yet).
    #[cfg_attr(feature = "openapi", schema(schema_with = super::schema::belief_what))]
    pub what: Option<&'static str>,
    /// Why part of it is missing (no model yet; no grid for this space), if it is.
    pub note: Option<String>,
    /// The open query's options (labels `A`, `B`, …) and then the recommendation
    /// (`recommended`), with the belief at each.
    pub options: Vec<OptionBelief>,
    /// The belief over the figure's grid, where there is one.
    pub grid: Option<GridBelief>,
}

/// The belief at one option.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct OptionBelief {
    /// `A`, `B`, … or `recommended`.
    pub label: String,
    /// Parameter names and values in user units.
    pub params: Vec<(String, agora_core::ParamValue)>,
    /// Posterior mean and sd.
    pub mean: f64,
    /// Posterior sd.
    pub sd: f64,
    /// Each person's estimated utility (mean, sd), for group models.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub people: BTreeMap<String, (f64, f64)>,
}

/// The belief on the figure's grid.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct GridBelief {
    /// The parameters along the grid's axes (1 or 2).
    pub axes: Vec<String>,
    /// The fixed coordinates of a slice through a larger space.
    pub slice: Option<String>,
    /// Points per axis: unit coordinates `i / (n − 1)` in 1-D, cell centres
    /// `(i + ½) / n` in 2-D with the first axis fastest.
    pub n: usize,
    /// Posterior means at the grid points.
    pub mean: Vec<f64>,
    /// Posterior sds at the grid points.
    pub sd: Vec<f64>,
}

/// The study's [`BeliefView`]; `people` adds each person's estimated utility (the
/// facilitator's view: it reflects private ballots).
pub fn belief_view(study: &LiveStudy, people: bool) -> StudyResult<BeliefView> {
    let mut options: Vec<OptionView> = study
        .pending_view(&Actor::Owner)
        .map(|v| v.options)
        .unwrap_or_default();
    if let Some(r) = study.recommendation() {
        options.push(OptionView {
            label: "recommended".into(),
            ..r.option
        });
    }
    let options: Vec<(OptionView, Vec<f64>)> = options
        .into_iter()
        .filter_map(|o| unit(&o.point).map(|u| (o, u)))
        .collect();
    let pts: Vec<Vec<f64>> = options.iter().map(|(_, u)| u.clone()).collect();
    let fig = figure(study)?;
    let what = fig.belief.as_ref().map(|b| b.what).ok();
    let note = fig.belief.as_ref().err().cloned();
    let grid = fig.belief.ok().map(|b| GridBelief {
        axes: b.axes.iter().map(|p| p.name().to_string()).collect(),
        slice: b.slice,
        n: b.n,
        mean: b.grid.iter().map(|p| p.0).collect(),
        sd: b.grid.iter().map(|p| p.1).collect(),
    });
    let beliefs = if pts.is_empty() {
        Some(Vec::new())
    } else {
        study.strategy().belief(&pts)
    };
    let Some(beliefs) = beliefs else {
        return Ok(BeliefView {
            what: None,
            note,
            options: Vec::new(),
            grid: None,
        });
    };
    let agents = if people && !pts.is_empty() {
        study.strategy().agent_beliefs(&pts)
    } else {
        None
    };
    let names = &study.spec().participants;
    let options = options
        .into_iter()
        .zip(beliefs)
        .enumerate()
        .map(|(i, ((o, _), (mean, sd)))| OptionBelief {
            label: o.label,
            params: o.params,
            mean,
            sd,
            people: agents
                .as_ref()
                .map(|a| names.iter().cloned().zip(a[i].iter().copied()).collect())
                .unwrap_or_default(),
        })
        .collect();
    Ok(BeliefView {
        what: what.or(Some(what_of(&study.spec().method))),
        note,
        options,
        grid,
    })
}

fn drawing_error(e: impl std::fmt::Display) -> Error {
    Error::State(format!("drawing the study's plot failed: {e}"))
}

/// What the figure shows, gathered before any drawing.
struct Figure {
    title: String,
    progress: Progress,
    /// The belief panel, or why there is none.
    belief: Result<Belief, String>,
}

enum Progress {
    /// Evaluation studies: every value told, in order.
    Values(Vec<f64>),
    /// Comparison and vote studies: for each kind of round, the seconds since the study
    /// was created at which rounds of that kind were answered.
    Rounds(Vec<(String, Vec<f64>)>),
}

/// The model's belief on a grid over a 1- or 2-D box, and the points to mark.
struct Belief {
    /// The box's parameters (1 or 2, none categorical).
    axes: Vec<Param>,
    /// Grid points per axis.
    n: usize,
    /// Mean and sd at the grid points (1-D: `t = i / (n - 1)`; 2-D: cell centres, first
    /// axis fastest).
    grid: Vec<(f64, f64)>,
    /// Points told about, with the value to draw them at (the observed value for
    /// evaluations, the model's mean for comparisons).
    told: Vec<(Vec<f64>, f64)>,
    /// The options open now, at the model's mean.
    open: Vec<(Vec<f64>, f64)>,
    /// The recommendation, at the model's mean.
    recommended: Option<(Vec<f64>, f64)>,
    /// What the model is a belief about.
    what: &'static str,
    /// For spaces of more than two parameters: the drawn slice's fixed coordinates, e.g.
    /// `slice at the recommendation: z = 0.4`.
    slice: Option<String>,
    /// For group models in 1-D: each person's estimated utility mean on the grid, by name.
    agents: Vec<(String, Vec<f64>)>,
}

fn unit(p: &Point) -> Option<Vec<f64>> {
    match p {
        Point::Unit(u) => Some(u.clone()),
        Point::Index(_) => None,
    }
}

fn figure(study: &LiveStudy) -> StudyResult<Figure> {
    let spec = study.spec();
    let start = study.stored().created_ms;
    let evaluates = evaluates(&spec.method);
    let mut asked: BTreeMap<u64, QueryKind> = BTreeMap::new();
    let mut values = Vec::new();
    let mut evaluated: Vec<(Vec<f64>, f64)> = Vec::new();
    let mut compared: Vec<Vec<f64>> = Vec::new();
    let mut rounds: Vec<(String, Vec<f64>)> = Vec::new();
    let mut round = |label: &str, t: f64| match rounds.iter_mut().find(|(l, _)| l == label) {
        Some((_, ts)) => ts.push(t),
        None => rounds.push((label.to_string(), vec![t])),
    };
    for e in study.events(&Actor::Owner)? {
        match e.kind {
            EventKind::Asked { query, .. } => {
                asked.insert(query.id, query.kind);
            }
            EventKind::Answered { answer, .. } => {
                let Some(kind) = asked.get(&answer.query_id) else {
                    continue;
                };
                let t = (e.at_ms - start).max(0) as f64 / 1000.0;
                match (kind, &answer.kind) {
                    (QueryKind::Evaluate { points }, AnswerKind::Values { values: v }) => {
                        for (p, y) in points.iter().zip(v) {
                            values.push(*y);
                            if let Some(u) = unit(p) {
                                evaluated.push((u, *y));
                            }
                        }
                    }
                    (QueryKind::Compare { points, .. }, a) => {
                        compared.extend(points.iter().filter_map(unit));
                        round("comparisons", t);
                        if matches!(a, AnswerKind::Tie { .. }) {
                            round("of which can't tell", t);
                        }
                    }
                    (
                        QueryKind::GroupVote {
                            points, channel, ..
                        },
                        _,
                    ) => {
                        compared.extend(points.iter().filter_map(unit));
                        round(channel_label(*channel), t);
                    }
                    (QueryKind::GroupRate { point, channel, .. }, _) => {
                        compared.extend(unit(point));
                        round(channel_label(*channel), t);
                    }
                    _ => {}
                }
            }
            EventKind::Imported { data } => {
                for o in data {
                    match o {
                        Observation::Evaluation { point, value } => evaluated.push((point, value)),
                        Observation::Comparison { winner, loser } => {
                            compared.push(winner);
                            compared.push(loser);
                        }
                    }
                }
            }
            EventKind::Ballot { .. } | EventKind::Enqueued { .. } | EventKind::Media { .. } => {}
        }
    }
    let answered = study.strategy().n_answered();
    let title = format!(
        "study `{}`: {} ({}), {answered} answered",
        spec.name,
        spec.method.name(),
        study.strategy().name()
    );
    let progress = if evaluates {
        Progress::Values(values)
    } else {
        Progress::Rounds(rounds)
    };
    let belief = belief(study, evaluates, evaluated, compared);
    Ok(Figure {
        title,
        progress,
        belief,
    })
}

fn channel_label(c: Channel) -> &'static str {
    match c {
        Channel::Public => "public rounds",
        Channel::Private => "private rounds",
    }
}

fn belief(
    study: &LiveStudy,
    evaluates: bool,
    evaluated: Vec<(Vec<f64>, f64)>,
    compared: Vec<Vec<f64>>,
) -> Result<Belief, String> {
    let Space::Box { params } = &study.spec().space else {
        return Err(
            "The options are a finite set: the belief is drawn over a 1- or 2-D box of \
                    parameters."
                .into(),
        );
    };
    if params
        .iter()
        .any(|p| matches!(p, Param::Categorical { .. }))
    {
        return Err(
            "The space has a categorical parameter: the belief is drawn over real and \
                    integer parameters only."
                .into(),
        );
    }
    let rec = study.recommendation().and_then(|r| unit(&r.option.point));
    // Over more than two parameters: the slice over the first two through the
    // recommendation (the box's centre before there is one).
    let dims: Vec<usize> = (0..params.len().min(2)).collect();
    let base: Vec<f64> = rec.clone().unwrap_or_else(|| vec![0.5; params.len()]);
    let slice = (params.len() > 2).then(|| {
        let fixed: Vec<String> = params[2..]
            .iter()
            .enumerate()
            .map(|(k, p)| format!("{} = {}", p.name(), user_label(p, base[k + 2])))
            .collect();
        format!(
            "slice at the {}: {}",
            if rec.is_some() {
                "recommendation"
            } else {
                "centre"
            },
            fixed.join(", ")
        )
    });
    let lift = |g: Vec<f64>| -> Vec<f64> {
        let mut x = base.clone();
        for (k, d) in dims.iter().enumerate() {
            x[*d] = g[k];
        }
        x
    };
    let project = |x: Vec<f64>| -> Vec<f64> { dims.iter().map(|d| x[*d]).collect() };
    let n = if dims.len() == 1 { 200 } else { 40 };
    let mut pts: Vec<Vec<f64>> = if dims.len() == 1 {
        (0..n).map(|i| vec![i as f64 / (n - 1) as f64]).collect()
    } else {
        (0..n * n)
            .map(|k| {
                let c = |i: usize| (i as f64 + 0.5) / n as f64;
                vec![c(k % n), c(k / n)]
            })
            .collect()
    };
    if params.len() > 2 {
        pts = pts.into_iter().map(lift).collect();
    }
    let n_grid = pts.len();
    // One call for every point: a model refitted on demand is fitted once.
    let marked: Vec<Vec<f64>> = if evaluates {
        Vec::new()
    } else {
        compared.clone()
    };
    let open: Vec<Vec<f64>> = match study.pending().map(|q| &q.kind) {
        Some(QueryKind::Compare { points, .. })
        | Some(QueryKind::Evaluate { points })
        | Some(QueryKind::GroupVote { points, .. }) => points.iter().filter_map(unit).collect(),
        Some(QueryKind::GroupRate { point, .. }) => unit(point).into_iter().collect(),
        _ => Vec::new(),
    };
    pts.extend(marked.iter().cloned());
    pts.extend(open.iter().cloned());
    pts.extend(rec.iter().cloned());
    let no_model = || {
        format!(
            "No belief panel: {} has no model that predicts at arbitrary points (yet); \
             progress only.",
            study.strategy().name()
        )
    };
    let b = study.strategy().belief(&pts).ok_or_else(no_model)?;
    if b.len() != pts.len() || b.iter().any(|(m, s)| !m.is_finite() || !s.is_finite()) {
        return Err("No belief panel: the model's belief is not finite here.".into());
    }
    // Each person's estimated utility, for group models, drawn in 1-D.
    let agents = match study.strategy().agent_beliefs(&pts[..n_grid]) {
        Some(a) if dims.len() == 1 && a.iter().flatten().all(|(m, _)| m.is_finite()) => study
            .spec()
            .participants
            .iter()
            .enumerate()
            .map(|(k, name)| {
                let means = a
                    .iter()
                    .map(|row| row.get(k).map_or(0.0, |p| p.0))
                    .collect();
                (name.clone(), means)
            })
            .collect(),
        _ => Vec::new(),
    };
    let mut rest = b[n_grid..].iter().map(|(m, _)| m.clamp(-CLAMP, CLAMP));
    let mut take = |xs: Vec<Vec<f64>>| -> Vec<(Vec<f64>, f64)> {
        xs.into_iter()
            .filter_map(|x| rest.next().map(|m| (project(x), m)))
            .collect()
    };
    let told = if evaluates {
        evaluated
            .into_iter()
            .map(|(x, y)| (project(x), y.clamp(-CLAMP, CLAMP)))
            .collect()
    } else {
        take(marked)
    };
    let open = take(open);
    let recommended = take(rec.into_iter().collect()).into_iter().next();
    Ok(Belief {
        axes: dims.iter().map(|d| params[*d].clone()).collect(),
        slice,
        agents,
        n,
        grid: b[..n_grid]
            .iter()
            .map(|(m, s)| (m.clamp(-CLAMP, CLAMP), s.min(CLAMP)))
            .collect(),
        told,
        open,
        recommended,
        what: what_of(&study.spec().method),
    })
}

/// Whether a method's studies are told measured values (else comparisons or votes).
fn evaluates(m: &MethodSpec) -> bool {
    matches!(m, MethodSpec::Bo { .. } | MethodSpec::Boap { .. })
}

/// What a method's model is a belief about.
fn what_of(m: &MethodSpec) -> &'static str {
    if evaluates(m) {
        "objective"
    } else if matches!(m, MethodSpec::Social { .. }) {
        "welfare"
    } else {
        "utility"
    }
}

type DrawResult = Result<(), String>;

fn e(err: impl std::fmt::Display) -> String {
    err.to_string()
}

fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, fig: &Figure) -> DrawResult {
    crate::chart::ensure_fonts();
    root.fill(&WHITE).map_err(e)?;
    let body = root.titled(&fig.title, ("sans-serif", 20)).map_err(e)?;
    let (w, _) = body.dim_in_pixel();
    let (left, right) = body.split_horizontally(w / 2);
    match &fig.progress {
        Progress::Values(v) => draw_values(&left, v)?,
        Progress::Rounds(r) => draw_rounds(&left, r)?,
    }
    match &fig.belief {
        Ok(b) if b.axes.len() == 1 => draw_1d(&right, b)?,
        Ok(b) => draw_2d(&right, b)?,
        Err(why) => draw_note(&right, why)?,
    }
    root.present().map_err(e)
}

/// A range covering `vals` with a margin; never empty, never infinite.
fn span(vals: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = vals
        .filter(|v| v.is_finite())
        .map(|v| v.clamp(-CLAMP, CLAMP))
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| {
            (l.min(v), h.max(v))
        });
    if lo > hi {
        return (0.0, 1.0);
    }
    let pad = (0.05 * hi - 0.05 * lo).max(1e-6 * hi.abs().max(lo.abs()).max(1.0));
    (lo - pad, hi + pad)
}

fn draw_note<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, text: &str) -> DrawResult {
    let style = ("sans-serif", 15).into_font().color(&BLACK.mix(0.7));
    let mut line = String::new();
    let mut y = 180;
    let mut lines = Vec::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.chars().count() + word.chars().count() > 48 {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    lines.push(line);
    for l in lines {
        area.draw(&Text::new(l, (30, y), style.clone()))
            .map_err(e)?;
        y += 22;
    }
    Ok(())
}

fn draw_values<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, values: &[f64]) -> DrawResult {
    if values.is_empty() {
        return draw_note(
            area,
            "No evaluations yet: progress appears after the first value.",
        );
    }
    let n = values.len();
    let shown: Vec<f64> = values.iter().map(|v| v.clamp(-CLAMP, CLAMP)).collect();
    let (lo, hi) = span(shown.iter().copied());
    let mut chart = ChartBuilder::on(area)
        .caption("best value so far", ("sans-serif", 16))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0.5..n as f64 + 0.5, lo..hi)
        .map_err(e)?;
    chart
        .configure_mesh()
        .x_desc("evaluation")
        .y_desc("value (larger is better)")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| tick(*y, lo, hi))
        .draw()
        .map_err(e)?;
    let grey = BLACK.mix(0.45);
    chart
        .draw_series(
            shown
                .iter()
                .enumerate()
                .map(|(i, v)| Circle::new(((i + 1) as f64, *v), 3, grey.filled())),
        )
        .map_err(e)?
        .label("value told")
        .legend(move |(x, y)| Circle::new((x + 9, y), 3, grey.filled()));
    let mut best = f64::NEG_INFINITY;
    let mut steps = Vec::with_capacity(2 * n);
    for (i, v) in shown.iter().enumerate() {
        best = best.max(*v);
        steps.push(((i + 1) as f64 - 0.5, best));
        steps.push(((i + 1) as f64 + 0.5, best));
    }
    let blue = BLUE.stroke_width(2);
    chart
        .draw_series(LineSeries::new(steps, blue))
        .map_err(e)?
        .label("best so far")
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], blue));
    legend(&mut chart)
}

fn legend<'a, DB: DrawingBackend + 'a, X: Ranged, Y: Ranged>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<X, Y>>,
) -> DrawResult {
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.6))
        .border_style(BLACK.mix(0.4))
        .label_font(("sans-serif", 13))
        .draw()
        .map_err(e)
}

fn draw_rounds<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    rounds: &[(String, Vec<f64>)],
) -> DrawResult {
    if rounds.is_empty() {
        return draw_note(
            area,
            "No answered rounds yet: progress appears after the first answer.",
        );
    }
    let t_max = rounds
        .iter()
        .flat_map(|(_, ts)| ts.iter().copied())
        .fold(0.0, f64::max);
    let (scale, unit) = if t_max < 120.0 {
        (1.0, "seconds")
    } else {
        (60.0, "minutes")
    };
    let x_hi = (t_max / scale * 1.05).max(1.0);
    let most = rounds.iter().map(|(_, ts)| ts.len()).max().unwrap_or(1);
    let mut chart = ChartBuilder::on(area)
        .caption("answered rounds over time", ("sans-serif", 16))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(50)
        .build_cartesian_2d(0.0..x_hi, 0.0..(most as f64 * 1.1).max(1.0))
        .map_err(e)?;
    chart
        .configure_mesh()
        .x_desc(format!("{unit} since the study was created"))
        .y_desc("rounds (cumulative)")
        // Rounds are whole: label only the whole ticks.
        .y_label_formatter(&|y| {
            if (y - y.round()).abs() < 1e-9 {
                format!("{y:.0}")
            } else {
                String::new()
            }
        })
        .draw()
        .map_err(e)?;
    for (k, (label, ts)) in rounds.iter().enumerate() {
        let color = crate::chart::TAB10[k % crate::chart::TAB10.len()];
        let mut steps = vec![(0.0, 0.0)];
        for (i, t) in ts.iter().enumerate() {
            let x = t / scale;
            steps.push((x, i as f64));
            steps.push((x, (i + 1) as f64));
        }
        let style = color.stroke_width(2);
        chart
            .draw_series(LineSeries::new(steps, style))
            .map_err(e)?
            .label(label.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], style));
        chart
            .draw_series(
                ts.iter()
                    .enumerate()
                    .map(|(i, t)| Circle::new((t / scale, (i + 1) as f64), 3, color.filled())),
            )
            .map_err(e)?;
    }
    legend(&mut chart)
}

/// A number for an axis label: up to 4 decimals, scientific when large or small.
fn number(x: f64) -> String {
    let a = x.abs();
    if a != 0.0 && !(1e-3..1e5).contains(&a) {
        format!("{x:.1e}")
    } else {
        let s = format!("{x:.4}");
        let s = s.trim_end_matches('0').trim_end_matches('.');
        if s == "-0" { "0".into() } else { s.into() }
    }
}

/// An axis tick on an axis spanning `lo..hi`: ticks within rounding noise of 0 are 0.
fn tick(y: f64, lo: f64, hi: f64) -> String {
    if y.abs() <= 1e-9 * (hi - lo).abs() {
        "0".into()
    } else {
        number(y)
    }
}

/// The user-unit value of unit coordinate `t` of a parameter, for axis labels.
/// `; slice at …` for a slice of a larger space, else nothing.
fn slice_note(b: &Belief) -> String {
    b.slice.as_ref().map_or(String::new(), |s| format!("; {s}"))
}

fn user_label(p: &Param, t: f64) -> String {
    let t = t.clamp(0.0, 1.0);
    match p {
        Param::Real { lo, hi, .. } => number(lo + t * (hi - lo)),
        Param::LogReal { lo, hi, .. } => number((lo.ln() + t * (hi.ln() - lo.ln())).exp()),
        Param::Integer { lo, hi, .. } => {
            let span = (*hi as f64 - *lo as f64) + 1.0;
            format!("{}", *lo as f64 + (t * span).floor().min(span - 1.0))
        }
        Param::Categorical { .. } => String::new(),
    }
}

fn markers<'a, DB: DrawingBackend + 'a>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    b: &Belief,
    at: impl Fn(&[f64], f64) -> (f64, f64),
) -> DrawResult {
    let told_label = if b.what == "objective" {
        "evaluated"
    } else {
        "compared"
    };
    if !b.told.is_empty() {
        chart
            .draw_series(b.told.iter().map(|(x, v)| {
                EmptyElement::at(at(x, *v))
                    + Circle::new((0, 0), 4, WHITE.filled())
                    + Circle::new((0, 0), 4, BLACK.stroke_width(1))
            }))
            .map_err(e)?
            .label(told_label)
            .legend(|(x, y)| {
                EmptyElement::at((x + 9, y))
                    + Circle::new((0, 0), 4, WHITE.filled())
                    + Circle::new((0, 0), 4, BLACK.stroke_width(1))
            });
    }
    let orange = RGBColor(255, 127, 14);
    if !b.open.is_empty() {
        chart
            .draw_series(
                b.open
                    .iter()
                    .map(|(x, v)| TriangleMarker::new(at(x, *v), 7, orange.filled())),
            )
            .map_err(e)?
            .label("asked now")
            .legend(move |(x, y)| TriangleMarker::new((x + 9, y), 7, orange.filled()));
    }
    if let Some((x, v)) = &b.recommended {
        chart
            .draw_series(std::iter::once(Cross::new(
                at(x, *v),
                7,
                RED.stroke_width(3),
            )))
            .map_err(e)?
            .label("recommended")
            .legend(|(x, y)| Cross::new((x + 9, y), 6, RED.stroke_width(3)));
    }
    Ok(())
}

fn draw_1d<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, b: &Belief) -> DrawResult {
    let p = &b.axes[0];
    let ts: Vec<f64> = (0..b.n).map(|i| i as f64 / (b.n - 1) as f64).collect();
    let (lo, hi) = span(
        b.grid
            .iter()
            .flat_map(|(m, s)| [m + 2.0 * s, m - 2.0 * s])
            .chain(b.told.iter().map(|(_, v)| *v))
            .chain(b.agents.iter().flat_map(|(_, m)| m.iter().copied())),
    );
    let mut chart = ChartBuilder::on(area)
        .caption(
            format!("model belief: {} mean ± 2 sd{}", b.what, slice_note(b)),
            ("sans-serif", 16),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..1.0, lo..hi)
        .map_err(e)?;
    chart
        .configure_mesh()
        .x_desc(p.name())
        .y_desc(b.what)
        .x_labels(6)
        .x_label_formatter(&|t| user_label(p, *t))
        .y_label_formatter(&|y| tick(*y, lo, hi))
        .draw()
        .map_err(e)?;
    let band_color = BLUE.mix(0.15);
    let clamp = |v: f64| v.clamp(lo, hi);
    let mut band: Vec<(f64, f64)> = ts
        .iter()
        .zip(&b.grid)
        .map(|(t, (m, s))| (*t, clamp(m + 2.0 * s)))
        .collect();
    band.extend(
        ts.iter()
            .zip(&b.grid)
            .rev()
            .map(|(t, (m, s))| (*t, clamp(m - 2.0 * s))),
    );
    chart
        .draw_series(std::iter::once(Polygon::new(band, band_color.filled())))
        .map_err(e)?
        .label("± 2 sd")
        .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 18, y + 5)], band_color.filled()));
    let blue = BLUE.stroke_width(2);
    chart
        .draw_series(LineSeries::new(
            ts.iter().zip(&b.grid).map(|(t, (m, _))| (*t, *m)),
            blue,
        ))
        .map_err(e)?
        .label("mean")
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], blue));
    for (k, (name, means)) in b.agents.iter().enumerate() {
        let c = Palette99::pick(k + 1).stroke_width(1);
        chart
            .draw_series(DashedLineSeries::new(
                ts.iter().zip(means).map(|(t, m)| (*t, clamp(*m))),
                5,
                4,
                c,
            ))
            .map_err(e)?
            .label(format!("{name} (estimated)"))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], c));
    }
    markers(&mut chart, b, |x, v| (x[0], v))?;
    legend(&mut chart)
}

/// Viridis, by linear interpolation between five of its colours; `f` in `[0, 1]`.
fn viridis(f: f64) -> RGBColor {
    const STOPS: [(u8, u8, u8); 5] = [
        (68, 1, 84),
        (59, 82, 139),
        (33, 145, 140),
        (94, 201, 98),
        (253, 231, 37),
    ];
    let f = if f.is_finite() {
        f.clamp(0.0, 1.0)
    } else {
        0.0
    } * 4.0;
    let i = (f.floor() as usize).min(3);
    let w = f - i as f64;
    let (a, b) = (STOPS[i], STOPS[i + 1]);
    let mix = |x: u8, y: u8| (x as f64 + w * (y as f64 - x as f64)).round() as u8;
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

fn draw_2d<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, b: &Belief) -> DrawResult {
    let (px, py) = (&b.axes[0], &b.axes[1]);
    let (lo, hi) = b
        .grid
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), (m, _)| {
            (l.min(*m), h.max(*m))
        });
    let mut chart = ChartBuilder::on(area)
        .caption(
            format!(
                "model belief: mean {} (dark {} to light {}){}",
                b.what,
                number(lo),
                number(hi),
                slice_note(b)
            ),
            ("sans-serif", 16),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..1.0, 0.0..1.0)
        .map_err(e)?;
    chart
        .configure_mesh()
        .disable_mesh()
        .x_desc(px.name())
        .y_desc(py.name())
        .x_labels(6)
        .x_label_formatter(&|t| user_label(px, *t))
        .y_label_formatter(&|t| user_label(py, *t))
        .draw()
        .map_err(e)?;
    let n = b.n;
    let width = hi - lo;
    chart
        .draw_series(b.grid.iter().enumerate().map(|(k, (m, _))| {
            let (i, j) = (k % n, k / n);
            let f = if width > 0.0 && width.is_finite() {
                (m - lo) / width
            } else {
                0.5
            };
            let cell = |i: usize| i as f64 / n as f64;
            Rectangle::new(
                [(cell(i), cell(j)), (cell(i + 1), cell(j + 1))],
                viridis(f).filled(),
            )
        }))
        .map_err(e)?;
    markers(&mut chart, b, |x, _| (x[0], x[1]))?;
    legend(&mut chart)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axis_numbers_are_short_and_user_units_are_mapped() {
        assert_eq!(number(0.5), "0.5");
        assert_eq!(number(-0.0), "0");
        assert_eq!(number(12.0), "12");
        assert_eq!(number(1.0e-4), "1.0e-4");
        assert_eq!(tick(5.55e-17, -0.3, 0.3), "0");
        assert_eq!(tick(0.1, -0.3, 0.3), "0.1");
        let log = Param::LogReal {
            name: "rate".into(),
            lo: 1e-4,
            hi: 1e-1,
        };
        // exp(ln 1e-4 + 0.5 (ln 1e-1 - ln 1e-4)) = 10^-2.5 = 3.162e-3.
        assert_eq!(user_label(&log, 0.5), "0.0032");
        let int = Param::Integer {
            name: "layers".into(),
            lo: 1,
            hi: 8,
        };
        assert_eq!(user_label(&int, 0.0), "1");
        assert_eq!(user_label(&int, 1.0), "8");
        assert!(span([2.0, 2.0].into_iter()).0 < 2.0);
        let (lo, hi) = span([-1e308, 1e308].into_iter());
        assert!((hi - lo).is_finite());
        assert_eq!(viridis(0.0), RGBColor(68, 1, 84));
        assert_eq!(viridis(1.0), RGBColor(253, 231, 37));
        assert_eq!(viridis(f64::NAN), RGBColor(68, 1, 84));
    }
}
