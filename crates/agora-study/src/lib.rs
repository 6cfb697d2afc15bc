//! agora-study: studies with people.
//!
//! [`live`] holds a study's definition (spec), its append-only event store behind the
//! [`live::Store`] trait (SQLite, or PostgreSQL for several processes or machines), exact resume by replay, ballots, status, export and plots;
//! [`chart`] the plotting primitives every agora chart shares (embedded font, palette, PNG
//! output); [`sweep`] the sweeps whose grid cells workers on many machines claim from a
//! PostgreSQL database. Simulated experiments live in `agora-experiments`, which may use this crate,
//! never the reverse.

pub mod chart;
pub mod live;
pub mod sweep;
