//! What an option looks like: a text description, a link to an image or page, or a file
//! (an image or a sound) that people see or hear beside the option's numbers.
//!
//! A candidate-set study names its candidates' media when it is created
//! ([`super::StudySpec::media`], e.g. a CSV column of image files, URLs or descriptions:
//! [`candidates_from_csv`]). A box-space study takes renderings of the open query's options
//! as they are asked (`POST .../media` by the facilitator or a renderer, e.g. a script that
//! draws each design): each is an event of the log ([`super::EventKind::Media`]), so every
//! server on the same database shows it, and replay stays exact (the strategy never sees
//! media).
//!
//! Limits: a file is at most [`MAX_FILE_BYTES`] and of one of [`CONTENT_TYPES`], and its
//! first bytes must be those of that type (a PNG that is not a PNG is refused); a text or
//! URL at most [`MAX_TEXT_CHARS`] characters, URLs `http` or `https` only.

use agora_core::{Error, Result, Space};
use base64::Engine;
use serde::{Deserialize, Serialize};

/// The largest media file, in bytes (before base64).
pub const MAX_FILE_BYTES: usize = 1024 * 1024;

/// The longest text description or URL, in characters.
pub const MAX_TEXT_CHARS: usize = 2000;

/// The media types a file may have.
pub const CONTENT_TYPES: [&str; 8] = [
    "image/png",
    "image/jpeg",
    "image/gif",
    "image/webp",
    "image/svg+xml",
    "audio/mpeg",
    "audio/wav",
    "audio/ogg",
];

/// How an option looks or sounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Media {
    /// A description people read.
    Text {
        /// At most 2,000 characters (`MAX_TEXT_CHARS`).
        #[cfg_attr(feature = "openapi", schema(max_length = 2000))]
        text: String,
    },
    /// A link (`http` or `https`): shown as an image where it is one, else as a link.
    Url {
        /// At most 2,000 characters (`MAX_TEXT_CHARS`).
        #[cfg_attr(feature = "openapi", schema(max_length = 2000))]
        url: String,
    },
    /// A file kept in the study: an image or a sound.
    File {
        /// One of `image/png`, `image/jpeg`, `image/gif`, `image/webp`, `image/svg+xml`,
        /// `audio/mpeg`, `audio/wav`, `audio/ogg` (`CONTENT_TYPES`).
        content_type: String,
        /// The bytes, base64 (standard alphabet, padded); at most 1 MiB before encoding
        /// (`MAX_FILE_BYTES`).
        #[cfg_attr(feature = "openapi", schema(max_length = 1_398_104))]
        data: String,
    },
}

impl Media {
    /// A file's media, checked ([`Media::validate`]).
    pub fn file(content_type: &str, bytes: &[u8], field: &str) -> Result<Media> {
        let m = Media::File {
            content_type: content_type.to_string(),
            data: base64::engine::general_purpose::STANDARD.encode(bytes),
        };
        m.validate(field)?;
        Ok(m)
    }

    /// Check the limits and the content; errors name `field`.
    pub fn validate(&self, field: &str) -> Result<()> {
        match self {
            Media::Text { text } => check_text(text, &format!("{field}.text")),
            Media::Url { url } => {
                let f = format!("{field}.url");
                check_text(url, &f)?;
                let rest = url
                    .strip_prefix("https://")
                    .or_else(|| url.strip_prefix("http://"));
                match rest {
                    Some(r)
                        if !r.is_empty()
                            && !url.chars().any(|c| {
                                c.is_whitespace() || c.is_control() || "\"<>`".contains(c)
                            }) =>
                    {
                        Ok(())
                    }
                    _ => Err(Error::invalid(
                        f,
                        format!(
                            "{url:?} is not a link people can open: an http:// or https:// URL \
                             without spaces or quotes"
                        ),
                    )),
                }
            }
            Media::File { content_type, .. } => {
                let bytes = self.bytes().ok_or_else(|| {
                    Error::invalid(
                        format!("{field}.data"),
                        "not base64 (standard alphabet, padded)",
                    )
                })?;
                check_file(content_type, &bytes, field)
            }
        }
    }

    /// A file's bytes (`None` for text and URLs, or data that is not base64).
    pub fn bytes(&self) -> Option<Vec<u8>> {
        match self {
            Media::File { data, .. } => base64::engine::general_purpose::STANDARD.decode(data).ok(),
            _ => None,
        }
    }
}

/// An option's media as a query shows it: a file by its type and size (its bytes are at
/// `GET /api/studies/{name}/media/{query_id}/{option}`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum MediaView {
    /// A description.
    Text {
        /// The text.
        text: String,
    },
    /// A link.
    Url {
        /// The URL.
        url: String,
    },
    /// A file kept in the study.
    File {
        /// Its media type.
        content_type: String,
        /// Its size in bytes.
        bytes: usize,
    },
}

impl From<&Media> for MediaView {
    fn from(m: &Media) -> MediaView {
        match m {
            Media::Text { text } => MediaView::Text { text: text.clone() },
            Media::Url { url } => MediaView::Url { url: url.clone() },
            Media::File { content_type, data } => MediaView::File {
                content_type: content_type.clone(),
                bytes: data.len() / 4 * 3 - data.bytes().rev().take_while(|&b| b == b'=').count(),
            },
        }
    }
}

fn check_text(text: &str, field: &str) -> Result<()> {
    let n = text.chars().count();
    if text.trim().is_empty() || n > MAX_TEXT_CHARS {
        return Err(Error::invalid(
            field,
            format!("{n} characters; allowed: 1 to {MAX_TEXT_CHARS}"),
        ));
    }
    Ok(())
}

/// Check a file's type, size and first bytes; errors name `field`.
pub fn check_file(content_type: &str, bytes: &[u8], field: &str) -> Result<()> {
    if !CONTENT_TYPES.contains(&content_type) {
        return Err(Error::invalid(
            format!("{field}.content_type"),
            format!(
                "{content_type:?} is not taken; allowed: {}",
                CONTENT_TYPES.join(", ")
            ),
        ));
    }
    if bytes.is_empty() || bytes.len() > MAX_FILE_BYTES {
        return Err(Error::invalid(
            format!("{field}.data"),
            format!("{} bytes; allowed: 1 to {MAX_FILE_BYTES}", bytes.len()),
        ));
    }
    if !looks_like(content_type, bytes) {
        return Err(Error::invalid(
            format!("{field}.data"),
            format!("the bytes do not begin as a {content_type} file does"),
        ));
    }
    Ok(())
}

/// Whether `bytes` start as a file of `content_type` does (the formats' signatures).
fn looks_like(content_type: &str, b: &[u8]) -> bool {
    let riff = |kind: &[u8]| b.len() >= 12 && &b[..4] == b"RIFF" && &b[8..12] == kind;
    match content_type {
        "image/png" => b.starts_with(b"\x89PNG\r\n\x1a\n"),
        "image/jpeg" => b.starts_with(&[0xFF, 0xD8, 0xFF]),
        "image/gif" => b.starts_with(b"GIF87a") || b.starts_with(b"GIF89a"),
        "image/webp" => riff(b"WEBP"),
        "audio/wav" => riff(b"WAVE"),
        "audio/ogg" => b.starts_with(b"OggS"),
        "audio/mpeg" => {
            b.starts_with(b"ID3") || (b.len() >= 2 && b[0] == 0xFF && b[1] & 0xE0 == 0xE0)
        }
        "image/svg+xml" => std::str::from_utf8(&b[..b.len().min(4096)])
            .map(|t| {
                let t = t.trim_start_matches('\u{feff}').trim_start();
                t.starts_with('<') && t.contains("<svg")
            })
            .unwrap_or(false),
        _ => false,
    }
}

/// The media type of a file, from its name's extension.
pub fn content_type_of(path: &std::path::Path) -> Option<&'static str> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    Some(match ext.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "svg" => "image/svg+xml",
        "mp3" => "audio/mpeg",
        "wav" => "audio/wav",
        "ogg" | "oga" => "audio/ogg",
        _ => return None,
    })
}

/// Check a study's candidate media: one entry (or null) per candidate, each valid.
pub fn check_spec_media(space: &Space, media: &[Option<Media>]) -> Result<()> {
    if media.is_empty() {
        return Ok(());
    }
    let Space::Candidates { names, .. } = space else {
        return Err(Error::invalid(
            "media",
            "only a candidate-set study names its options' media when it is created; a box \
             space takes renderings of each open query (`POST .../media`, `agora study media`)",
        ));
    };
    if media.len() != names.len() {
        return Err(Error::invalid(
            "media",
            format!(
                "{} entries for {} candidates: one per candidate (null for none)",
                media.len(),
                names.len()
            ),
        ));
    }
    for (i, m) in media.iter().enumerate() {
        if let Some(m) = m {
            m.validate(&format!("media[{i}]"))?;
        }
    }
    Ok(())
}

/// A candidate set from CSV text: a header, then one row per candidate. The column `name`
/// (else the first) names the candidates; `media_column`, if given, holds each one's media
/// (a file path, relative to `base`, of one of [`CONTENT_TYPES`]; an `http(s)://` URL; or
/// a text description; empty for none); every other column is a number, scaled to `[0, 1]`
/// over the rows (a column with one value becomes 0.5). Errors name the line.
pub fn candidates_from_csv(
    text: &str,
    base: &std::path::Path,
    media_column: Option<&str>,
) -> Result<(Space, Vec<Option<Media>>)> {
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let Some((_, header)) = lines.next() else {
        return Err(Error::invalid("candidates", "the CSV is empty"));
    };
    let header = super::import::csv_fields(header)
        .map_err(|e| Error::invalid("candidates (line 1)", e.to_string()))?;
    let name_col = header.iter().position(|h| h == "name").unwrap_or(0);
    let media_col = match media_column {
        None => None,
        Some(c) => Some(header.iter().position(|h| h == c).ok_or_else(|| {
            Error::invalid(
                "media_column",
                format!("no column {c:?}; the columns: {}", header.join(", ")),
            )
        })?),
    };
    let feature_cols: Vec<usize> = (0..header.len())
        .filter(|&j| j != name_col && Some(j) != media_col)
        .collect();
    if feature_cols.is_empty() {
        return Err(Error::invalid(
            "candidates",
            "no feature columns: besides the name and media, at least one numeric column",
        ));
    }
    let (mut names, mut raw, mut media) = (Vec::new(), Vec::new(), Vec::new());
    for (i, line) in lines {
        let at = |e: String| Error::invalid(format!("candidates (line {})", i + 1), e);
        let f = super::import::csv_fields(line).map_err(|e| at(e.to_string()))?;
        if f.len() != header.len() {
            return Err(at(format!(
                "{} fields, the header has {}",
                f.len(),
                header.len()
            )));
        }
        names.push(f[name_col].trim().to_string());
        let mut row = Vec::with_capacity(feature_cols.len());
        for &j in &feature_cols {
            let v: f64 = f[j]
                .trim()
                .parse()
                .ok()
                .filter(|v: &f64| v.is_finite())
                .ok_or_else(|| {
                    at(format!(
                        "column {:?}: {:?} is not a finite number",
                        header[j], f[j]
                    ))
                })?;
            row.push(v);
        }
        raw.push(row);
        media.push(match media_col {
            None => None,
            Some(j) => media_cell(f[j].trim(), base).map_err(|e| at(e.to_string()))?,
        });
    }
    let d = feature_cols.len();
    let mut features = raw.clone();
    for k in 0..d {
        let lo = raw.iter().map(|r| r[k]).fold(f64::INFINITY, f64::min);
        let hi = raw.iter().map(|r| r[k]).fold(f64::NEG_INFINITY, f64::max);
        for (r, x) in features.iter_mut().zip(&raw) {
            r[k] = if hi > lo {
                (x[k] - lo) / (hi - lo)
            } else {
                0.5
            };
        }
    }
    let space = Space::Candidates { names, features };
    space.validate()?;
    let media = if media_col.is_some() {
        media
    } else {
        Vec::new()
    };
    check_spec_media(&space, &media)?;
    Ok((space, media))
}

/// One media cell: a URL, a file (by its extension, relative to `base`), or text.
fn media_cell(cell: &str, base: &std::path::Path) -> Result<Option<Media>> {
    if cell.is_empty() {
        return Ok(None);
    }
    if cell.starts_with("http://") || cell.starts_with("https://") {
        let m = Media::Url { url: cell.into() };
        m.validate("media")?;
        return Ok(Some(m));
    }
    let path = base.join(cell);
    if let Some(ct) = content_type_of(&path).filter(|_| !cell.contains(char::is_whitespace)) {
        let bytes = std::fs::read(&path).map_err(|e| {
            Error::invalid("media", format!("cannot read `{}`: {e}", path.display()))
        })?;
        return Media::file(ct, &bytes, "media").map(Some);
    }
    let m = Media::Text { text: cell.into() };
    m.validate("media")?;
    Ok(Some(m))
}

#[cfg(test)]
mod tests {
    use super::*;

    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";

    #[test]
    fn files_are_checked_by_type_size_and_first_bytes() {
        assert!(Media::file("image/png", PNG, "m").is_ok());
        let e = Media::file("image/png", b"GIF89a....", "m").unwrap_err();
        assert!(e.to_string().contains("do not begin as a image/png"), "{e}");
        let e = Media::file("application/pdf", b"%PDF", "m").unwrap_err();
        assert!(e.to_string().contains("allowed: image/png"), "{e}");
        let big = [PNG, &vec![0u8; MAX_FILE_BYTES]].concat();
        assert!(Media::file("image/png", &big, "m").is_err());
        let svg = br#"<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"/>"#;
        assert!(Media::file("image/svg+xml", svg, "m").is_ok());
        assert!(Media::file("image/svg+xml", b"<html><script>", "m").is_err());
        let bad = Media::File {
            content_type: "image/png".into(),
            data: "not base64!".into(),
        };
        assert!(
            bad.validate("m")
                .unwrap_err()
                .to_string()
                .contains("m.data")
        );
    }

    #[test]
    fn urls_are_http_links_and_texts_bounded() {
        let ok = Media::Url {
            url: "https://example.org/a.png".into(),
        };
        assert!(ok.validate("m").is_ok());
        for url in ["javascript:alert(1)", "https://", "http://a b", "ftp://x"] {
            let m = Media::Url { url: url.into() };
            assert!(m.validate("m").is_err(), "{url}");
        }
        assert!(Media::Text { text: " ".into() }.validate("m").is_err());
        let long = Media::Text {
            text: "x".repeat(MAX_TEXT_CHARS + 1),
        };
        assert!(long.validate("m").is_err());
    }

    #[test]
    fn a_csv_of_candidates_with_a_media_column() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.png"), PNG).unwrap();
        let csv = "name,width,picture,height\n\
                   red,10,a.png,1\n\
                   blue,20,https://example.org/b.jpg,1\n\
                   green,30,\"a calm, green room\",1\n\
                   grey,15,,1\n";
        let (space, media) = candidates_from_csv(csv, dir.path(), Some("picture")).unwrap();
        let Space::Candidates { names, features } = &space else {
            panic!("{space:?}")
        };
        assert_eq!(names, &["red", "blue", "green", "grey"]);
        assert_eq!(features[1], vec![0.5, 0.5]);
        assert_eq!(features[0][0], 0.0);
        assert_eq!(features[2][0], 1.0);
        assert!(
            matches!(&media[0], Some(Media::File { content_type, .. }) if content_type == "image/png")
        );
        assert!(matches!(&media[1], Some(Media::Url { .. })));
        assert_eq!(
            media[2],
            Some(Media::Text {
                text: "a calm, green room".into()
            })
        );
        assert_eq!(media[3], None);
        // Errors name the line.
        let e = candidates_from_csv("name,w\nx,1\ny,oops\n", dir.path(), None).unwrap_err();
        assert!(e.to_string().contains("line 3"), "{e}");
        let e =
            candidates_from_csv("name,w,p\nx,1,missing.png\n", dir.path(), Some("p")).unwrap_err();
        assert!(
            e.to_string().contains("line 2") && e.to_string().contains("cannot read"),
            "{e}"
        );
        let e = candidates_from_csv("name,w\nx,1\n", dir.path(), Some("p")).unwrap_err();
        assert!(e.to_string().contains("media_column"), "{e}");
    }
}
