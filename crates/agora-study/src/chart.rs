//! The plotting primitives every agora chart shares: the embedded font, the palette and PNG
//! output.
//!
//! Text is drawn with DejaVu Sans Mono (assets/, Bitstream Vera / DejaVu licence in
//! assets/DejaVu-LICENSE), embedded and rendered by pure-Rust `ab_glyph`, so plots need no
//! system font libraries.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::FontStyle;
use std::path::Path;
use std::sync::Once;

static FONT: &[u8] = include_bytes!("../assets/DejaVuSansMono.ttf");
static REGISTER: Once = Once::new();

/// Register the embedded font as `sans-serif` (idempotent); call before plotting.
pub fn ensure_fonts() {
    REGISTER.call_once(|| {
        for style in [FontStyle::Normal, FontStyle::Bold] {
            // The bytes are a valid TrueType file checked in with the crate.
            let _ = plotters::style::register_font("sans-serif", style, FONT);
        }
    });
}

/// Render `draw` into `dir/stem.png` (800 × 500); returns the file name.
pub fn render<F>(dir: &Path, stem: &str, draw: F) -> agora_core::Result<String>
where
    F: FnOnce(&DrawingArea<BitMapBackend<'_>, Shift>) -> Result<(), String>,
{
    ensure_fonts();
    let name = format!("{stem}.png");
    let path = dir.join(&name);
    let root = BitMapBackend::new(&path, (800, 500)).into_drawing_area();
    draw(&root).map_err(|e| {
        agora_core::Error::invalid("out", format!("cannot write {}: {e}", path.display()))
    })?;
    Ok(name)
}

/// The palette of every agora chart (matplotlib's `tab10`), one colour per series in order.
pub const TAB10: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];
