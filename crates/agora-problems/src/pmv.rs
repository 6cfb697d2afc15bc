//! Predicted Mean Vote (PMV) and Predicted Percentage of Dissatisfied (PPD) after ISO 7730
//! (Fanger's heat balance), and the per-agent utilities of the three-agent thermal-comfort task.
//!
//! Implemented from the equations of ISO 7730 (section 4 and Annex D) as restated in
//! `conformance/pmv/README.md`; no code was copied. Two details matter for reproducing
//! published values:
//!
//! - Temperatures enter the heat balance as `t + 273` (not `+ 273.15`), as in the standard.
//! - The clothing surface temperature `tcl` is **not** solved to convergence: it comes from the
//!   standard's Annex D fixed-point iteration on `x = (tcl + 273) / 100` (start from the
//!   estimate `t_cla`, damp by averaging, stop when successive values differ by at most
//!   0.00015), and the PMV uses that `tcl` with the convective coefficient `hc` of the last
//!   pass. A fully converged solve differs by up to about 0.005 in PMV.
//!
//! The iteration is capped at [`MAX_TCL_PASSES`] passes (the cap of pythermalcomfort, the
//! reference the fixtures were produced with); hitting the cap is a
//! [`Error::Numerical`]. Inputs are *not* restricted to the ISO applicability ranges (the
//! fixtures go beyond them); only physically impossible values are rejected.

use agora_core::{Error, Result, check_finite};

/// One met in W/m².
const MET_W_M2: f64 = 58.15;
/// One clo in m²·K/W.
const CLO_M2K_W: f64 = 0.155;
/// Annex D stopping tolerance on `x = (tcl + 273) / 100`.
const TCL_TOLERANCE: f64 = 0.00015;
/// Most passes of the Annex D clothing-temperature iteration before giving up.
pub const MAX_TCL_PASSES: usize = 150;

/// The six (plus external work) inputs of the PMV, in SI units.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PmvInput {
    /// Air (dry-bulb) temperature, °C.
    pub tdb: f64,
    /// Mean radiant temperature, °C.
    pub tr: f64,
    /// Relative air speed, m/s (used as given; see [`relative_air_speed`]).
    pub vr: f64,
    /// Relative humidity, % (0 to 100).
    pub rh: f64,
    /// Metabolic rate, met (1 met = 58.15 W/m²).
    pub met: f64,
    /// Clothing insulation, clo (1 clo = 0.155 m²·K/W).
    pub clo: f64,
    /// External work, met (usually 0).
    pub wme: f64,
}

impl PmvInput {
    /// Reject non-finite and physically impossible values, naming the field and what is allowed.
    fn validate(&self) -> Result<()> {
        let fields = [
            ("tdb", self.tdb),
            ("tr", self.tr),
            ("vr", self.vr),
            ("rh", self.rh),
            ("met", self.met),
            ("clo", self.clo),
            ("wme", self.wme),
        ];
        for (name, v) in fields {
            check_finite(name, v)?;
        }
        for (name, t) in [("tdb", self.tdb), ("tr", self.tr)] {
            if t <= -273.0 {
                return Err(Error::invalid(
                    name,
                    format!("must be above -273 °C (absolute zero), got {t}"),
                ));
            }
        }
        if !(0.0..=100.0).contains(&self.rh) {
            return Err(Error::invalid(
                "rh",
                format!("must be in [0, 100] %, got {}", self.rh),
            ));
        }
        if self.met <= 0.0 {
            return Err(Error::invalid(
                "met",
                format!("must be > 0 met, got {}", self.met),
            ));
        }
        if self.clo < 0.0 {
            return Err(Error::invalid(
                "clo",
                format!("must be >= 0 clo, got {}", self.clo),
            ));
        }
        if self.vr < 0.0 {
            return Err(Error::invalid(
                "vr",
                format!("must be >= 0 m/s, got {}", self.vr),
            ));
        }
        if self.wme < 0.0 || self.wme >= self.met {
            return Err(Error::invalid(
                "wme",
                format!(
                    "must be in [0, met) = [0, {}) met, got {}",
                    self.met, self.wme
                ),
            ));
        }
        Ok(())
    }
}

/// Predicted Mean Vote of ISO 7730 (Fanger), on the 7-point scale −3 (cold) to +3 (hot);
/// values beyond ±3 are returned as computed.
///
/// Errors: an input that is not finite or physically impossible (`rh` outside \[0, 100\],
/// `met <= 0`, `clo < 0`, `vr < 0`, `wme` outside \[0, met), a temperature at or below
/// −273 °C) names the field; an iteration that does not settle within [`MAX_TCL_PASSES`]
/// passes, or a non-finite result from extreme inputs, is [`Error::Numerical`].
pub fn pmv(input: &PmvInput) -> Result<f64> {
    input.validate()?;
    let &PmvInput {
        tdb,
        tr,
        vr,
        rh,
        met,
        clo,
        wme,
    } = input;

    // Water-vapour partial pressure, Pa.
    let pa = rh * 10.0 * (16.6536 - 4030.183 / (tdb + 235.0)).exp();
    let icl = CLO_M2K_W * clo;
    let m = MET_W_M2 * met;
    let mw = m - MET_W_M2 * wme;
    // Clothing area factor.
    let fcl = if icl <= 0.078 {
        1.0 + 1.29 * icl
    } else {
        1.05 + 0.645 * icl
    };
    // Forced-convection heat transfer coefficient.
    let hcf = 12.1 * vr.sqrt();
    let taa = tdb + 273.0;
    let tra = tr + 273.0;

    let (xn, hc) = clothing_temperature_iteration(tdb, taa, tra, mw, icl, fcl, hcf)?;
    let tcl = 100.0 * xn - 273.0;

    // Heat losses, W/m².
    let skin_diffusion = 3.05e-3 * (5733.0 - 6.99 * mw - pa);
    let sweating = if mw > MET_W_M2 {
        0.42 * (mw - MET_W_M2)
    } else {
        0.0
    };
    let latent_respiration = 1.7e-5 * m * (5867.0 - pa);
    let dry_respiration = 0.0014 * m * (34.0 - tdb);
    // 3.96e-8 fcl ((tcl+273)^4 - (tr+273)^4), written in the scaled x = T/100 form.
    let radiation = 3.96 * fcl * (xn.powi(4) - (tra / 100.0).powi(4));
    let convection = fcl * hc * (tcl - tdb);

    let sensitivity = 0.303 * (-0.036 * m).exp() + 0.028;
    let value = sensitivity
        * (mw
            - skin_diffusion
            - sweating
            - latent_respiration
            - dry_respiration
            - radiation
            - convection);
    if !value.is_finite() {
        return Err(Error::Numerical(format!(
            "PMV is not finite ({value}) for {input:?}; the inputs are too extreme for the heat balance"
        )));
    }
    Ok(value)
}

/// ISO 7730 Annex D fixed-point iteration for `x = (tcl + 273) / 100`; returns the last `x`
/// and the convective coefficient `hc` of the last pass.
fn clothing_temperature_iteration(
    tdb: f64,
    taa: f64,
    tra: f64,
    mw: f64,
    icl: f64,
    fcl: f64,
    hcf: f64,
) -> Result<(f64, f64)> {
    let p1 = icl * fcl;
    let p2 = 3.96 * p1;
    let p3 = 100.0 * p1;
    let p4 = p1 * taa;
    let p5 = 308.7 - 0.028 * mw + p2 * (tra / 100.0).powi(4);
    // First estimate of the clothing temperature (K); x_f = 2 x_n, so one pass always runs.
    let t_cla = taa + (35.5 - tdb) / (3.5 * (6.45 * icl + 0.1));
    let mut xn = t_cla / 100.0;
    let mut xf = t_cla / 50.0;
    let mut hc = hcf;
    let mut passes = 0;
    while (xn - xf).abs() > TCL_TOLERANCE {
        if passes == MAX_TCL_PASSES {
            return Err(Error::Numerical(format!(
                "PMV: the ISO 7730 clothing-temperature iteration did not settle within \
                 {MAX_TCL_PASSES} passes (last step {:e})",
                (xn - xf).abs()
            )));
        }
        xf = (xf + xn) / 2.0;
        let hcn = 2.38 * (100.0 * xf - taa).abs().powf(0.25);
        hc = hcn.max(hcf);
        xn = (p5 + p4 * hc - p2 * xf.powi(4)) / (100.0 + p3 * hc);
        passes += 1;
    }
    if !xn.is_finite() || !hc.is_finite() {
        return Err(Error::Numerical(format!(
            "PMV: the clothing-temperature iteration produced a non-finite value (x = {xn}, hc = {hc})"
        )));
    }
    Ok((xn, hc))
}

/// Predicted Percentage of Dissatisfied (%) of ISO 7730:
/// `100 − 95 exp(−0.03353 PMV⁴ − 0.2179 PMV²)`; 5 at PMV = 0, symmetric in PMV.
/// A NaN PMV gives NaN.
pub fn ppd(pmv: f64) -> f64 {
    100.0 - 95.0 * (-0.03353 * pmv.powi(4) - 0.2179 * pmv.powi(2)).exp()
}

/// `(PMV, PPD)` of one input; errors as in [`pmv`].
pub fn pmv_ppd(input: &PmvInput) -> Result<(f64, f64)> {
    let v = pmv(input)?;
    Ok((v, ppd(v)))
}

/// Relative air speed (m/s) of a moving body: `v + 0.3 (met − 1)` when `met > 1`, else `v`.
pub fn relative_air_speed(air_speed: f64, met: f64) -> f64 {
    if met > 1.0 {
        air_speed + 0.3 * (met - 1.0)
    } else {
        air_speed
    }
}

/// A person of the thermal-comfort task: activity and clothing.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ThermalAgent {
    /// Metabolic rate, met.
    pub met: f64,
    /// Clothing insulation, clo.
    pub clo: f64,
}

/// The three agents of the thermal-comfort task (`conformance/pmv/README.md`), agents 1, 2, 3.
pub const THERMAL_AGENTS: [ThermalAgent; 3] = [
    ThermalAgent {
        met: 2.2,
        clo: 0.97,
    },
    ThermalAgent {
        met: 2.7,
        clo: 0.25,
    },
    ThermalAgent {
        met: 1.0,
        clo: 0.63,
    },
];

/// Utility `−|PMV|` of `agent` in a room at `temperature` (°C, air = mean radiant) with
/// `air_speed` (m/s, converted by [`relative_air_speed`]), 50 % humidity and no external work.
///
/// Errors: non-finite `temperature` or `air_speed`, negative `air_speed`, and the errors of
/// [`pmv`] (e.g. an agent with `met <= 0`).
pub fn thermal_utility(agent: &ThermalAgent, temperature: f64, air_speed: f64) -> Result<f64> {
    check_finite("temperature", temperature)?;
    check_finite("air_speed", air_speed)?;
    if air_speed < 0.0 {
        return Err(Error::invalid(
            "air_speed",
            format!("must be >= 0 m/s, got {air_speed}"),
        ));
    }
    let input = PmvInput {
        tdb: temperature,
        tr: temperature,
        vr: relative_air_speed(air_speed, agent.met),
        rh: 50.0,
        met: agent.met,
        clo: agent.clo,
        wme: 0.0,
    };
    Ok(-pmv(&input)?.abs())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn office(tdb: f64, tr: f64, vr: f64, rh: f64, clo: f64) -> PmvInput {
        PmvInput {
            tdb,
            tr,
            vr,
            rh,
            met: 1.2,
            clo,
            wme: 0.0,
        }
    }

    #[test]
    fn ppd_is_five_at_neutral() {
        assert_eq!(ppd(0.0), 5.0);
    }

    #[test]
    fn ppd_is_symmetric_and_matches_closed_form() {
        // 100 - 95 exp(-0.03353 x^4 - 0.2179 x^2) evaluated with Python's math module.
        let expected = [
            (0.5, 10.225024554501047),
            (1.0, 26.119650083580567),
            (2.0, 76.76181358773741),
            (3.0, 99.11587171526925),
        ];
        for (x, p) in expected {
            assert_eq!(ppd(x), ppd(-x));
            assert!((ppd(x) - p).abs() < 1e-12, "ppd({x}) = {}", ppd(x));
        }
    }

    #[test]
    fn iso_7730_table_d1_examples() {
        // ISO 7730:2005 Table D.1, rows 1-3 (PMV to 2 decimals, PPD to whole %).
        let rows = [
            (office(22.0, 22.0, 0.1, 60.0, 0.5), -0.75, 17.0),
            (office(27.0, 27.0, 0.1, 60.0, 0.5), 0.77, 17.0),
            (office(27.0, 27.0, 0.3, 60.0, 0.5), 0.44, 9.0),
        ];
        for (input, pmv_ref, ppd_ref) in rows {
            let (v, p) = pmv_ppd(&input).unwrap();
            assert!((v - pmv_ref).abs() <= 0.01, "{input:?}: pmv {v}");
            assert!((p - ppd_ref).abs() <= 0.5, "{input:?}: ppd {p}");
        }
    }

    #[test]
    fn pmv_increases_with_temperature() {
        for agent in &THERMAL_AGENTS {
            for air_speed in [0.1, 0.5, 1.5] {
                let mut last = f64::NEG_INFINITY;
                for k in 0..=60 {
                    let t = 10.0 + 0.5 * f64::from(k);
                    let input = PmvInput {
                        tdb: t,
                        tr: t,
                        vr: relative_air_speed(air_speed, agent.met),
                        rh: 50.0,
                        met: agent.met,
                        clo: agent.clo,
                        wme: 0.0,
                    };
                    let v = pmv(&input).unwrap();
                    assert!(
                        v > last,
                        "{agent:?}, v = {air_speed}: PMV {v} at {t} after {last}"
                    );
                    last = v;
                }
            }
        }
    }

    #[test]
    fn relative_air_speed_adds_body_movement_above_one_met() {
        assert_eq!(relative_air_speed(0.2, 1.0), 0.2);
        assert_eq!(relative_air_speed(0.2, 0.8), 0.2);
        assert!((relative_air_speed(0.2, 2.0) - 0.5).abs() < 1e-15);
    }

    #[test]
    fn thermal_utility_is_minus_abs_pmv() {
        let agent = THERMAL_AGENTS[2];
        for t in [15.0, 24.0, 33.0] {
            let input = PmvInput {
                tdb: t,
                tr: t,
                vr: 0.4,
                rh: 50.0,
                met: 1.0,
                clo: 0.63,
                wme: 0.0,
            };
            assert_eq!(
                thermal_utility(&agent, t, 0.4).unwrap(),
                -pmv(&input).unwrap().abs()
            );
        }
    }

    /// Makes one field of a valid input bad.
    type Spoil = fn(&mut PmvInput);

    fn err_text(input: PmvInput) -> String {
        pmv(&input).unwrap_err().to_string()
    }

    #[test]
    fn non_finite_inputs_name_the_field() {
        let base = office(22.0, 22.0, 0.1, 60.0, 0.5);
        let cases: [(&str, Spoil); 7] = [
            ("tdb", |i| i.tdb = f64::NAN),
            ("tr", |i| i.tr = f64::INFINITY),
            ("vr", |i| i.vr = f64::NAN),
            ("rh", |i| i.rh = f64::NEG_INFINITY),
            ("met", |i| i.met = f64::NAN),
            ("clo", |i| i.clo = f64::NAN),
            ("wme", |i| i.wme = f64::NAN),
        ];
        for (field, spoil) in cases {
            let mut input = base;
            spoil(&mut input);
            let msg = err_text(input);
            assert!(msg.contains(&format!("`{field}`")), "{field}: {msg}");
            assert!(msg.contains("finite"), "{field}: {msg}");
        }
    }

    #[test]
    fn impossible_inputs_name_the_field_and_range() {
        let base = office(22.0, 22.0, 0.1, 60.0, 0.5);
        let cases: [(&str, &str, Spoil); 9] = [
            ("rh", "[0, 100]", |i| i.rh = 100.5),
            ("rh", "[0, 100]", |i| i.rh = -1.0),
            ("met", "> 0", |i| i.met = 0.0),
            ("clo", ">= 0", |i| i.clo = -0.1),
            ("vr", ">= 0", |i| i.vr = -0.01),
            ("wme", "[0, met)", |i| i.wme = -0.1),
            ("wme", "[0, met)", |i| i.wme = 1.2),
            ("tdb", "-273", |i| i.tdb = -300.0),
            ("tr", "-273", |i| i.tr = -273.0),
        ];
        for (field, range, spoil) in cases {
            let mut input = base;
            spoil(&mut input);
            let msg = err_text(input);
            assert!(msg.contains(&format!("`{field}`")), "{field}: {msg}");
            assert!(msg.contains(range), "{field}: {msg}");
        }
    }

    #[test]
    fn boundary_values_are_accepted() {
        for input in [
            office(22.0, 22.0, 0.0, 0.0, 0.0),
            office(22.0, 22.0, 0.1, 100.0, 2.0),
            PmvInput {
                wme: 1.1,
                ..office(22.0, 22.0, 0.1, 60.0, 0.5)
            },
        ] {
            assert!(pmv(&input).unwrap().is_finite(), "{input:?}");
        }
    }

    #[test]
    fn extreme_finite_inputs_error_instead_of_nan() {
        let input = office(1e300, 1e300, 0.1, 60.0, 0.5);
        assert!(matches!(pmv(&input), Err(Error::Numerical(_))));
    }

    #[test]
    fn thermal_utility_rejects_bad_room() {
        let agent = THERMAL_AGENTS[0];
        let msg = thermal_utility(&agent, f64::NAN, 0.5)
            .unwrap_err()
            .to_string();
        assert!(msg.contains("`temperature`"), "{msg}");
        let msg = thermal_utility(&agent, 22.0, f64::INFINITY)
            .unwrap_err()
            .to_string();
        assert!(msg.contains("`air_speed`"), "{msg}");
        let msg = thermal_utility(&agent, 22.0, -0.5).unwrap_err().to_string();
        assert!(msg.contains("`air_speed`") && msg.contains(">= 0"), "{msg}");
        let bad = ThermalAgent { met: 0.0, clo: 0.5 };
        let msg = thermal_utility(&bad, 22.0, 0.5).unwrap_err().to_string();
        assert!(msg.contains("`met`"), "{msg}");
    }
}
