//! Helpers for strategies' saved states ("snapshots"): numbers that must come back bit for
//! bit, including the NaN and infinities JSON cannot write, and a stable checksum.
//!
//! JSON numbers round-trip finite `f64` exactly (serde_json's `float_roundtrip`), but NaN
//! and ±∞ have no JSON form; [`nonfinite`] writes them as the strings `"NaN"`, `"inf"` and
//! `"-inf"`.

/// `#[serde(with = "agora_core::snapshot::nonfinite")]` on an `f64`: finite values as
/// numbers, NaN and ±∞ as strings.
pub mod nonfinite {
    use serde::de::Error as _;
    use serde::{Deserialize, Deserializer, Serializer};

    /// Write one value.
    pub fn serialize<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        if v.is_nan() {
            s.serialize_str("NaN")
        } else if v.is_infinite() {
            s.serialize_str(if *v > 0.0 { "inf" } else { "-inf" })
        } else {
            s.serialize_f64(*v)
        }
    }

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Num {
        N(f64),
        S(String),
        Null(()),
    }

    /// Read one value: a number, `"NaN"`, `"inf"`, `"-inf"`, or `null` (NaN, as plain
    /// serde_json writes a NaN; fields written that way can still be read back).
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        match Num::deserialize(d)? {
            Num::N(v) => Ok(v),
            Num::Null(()) => Ok(f64::NAN),
            Num::S(s) => match s.as_str() {
                "NaN" => Ok(f64::NAN),
                "inf" => Ok(f64::INFINITY),
                "-inf" => Ok(f64::NEG_INFINITY),
                other => Err(D::Error::custom(format!(
                    "expected a number, \"NaN\", \"inf\" or \"-inf\", got \"{other}\""
                ))),
            },
        }
    }
}

/// `#[serde(with = "agora_core::snapshot::nonfinite_vec")]` on a `Vec<f64>`.
pub mod nonfinite_vec {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize, Deserialize)]
    struct F(#[serde(with = "super::nonfinite")] f64);

    /// Write the values.
    pub fn serialize<S: Serializer>(v: &[f64], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(v.iter().map(|x| F(*x)))
    }

    /// Read the values.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<f64>, D::Error> {
        Ok(Vec::<F>::deserialize(d)?.into_iter().map(|f| f.0).collect())
    }
}

/// FNV-1a (64 bit) of `bytes`: a checksum that is the same on every platform and Rust
/// version (the standard library's hasher promises neither), for detecting a snapshot that
/// does not belong to the log or was damaged; not a defence against deliberate tampering.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    fnv1a_extend(FNV_OFFSET, bytes)
}

/// FNV-1a's starting value: `fnv1a_extend(FNV_OFFSET, b)` is `fnv1a(b)`.
pub const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// Continue an FNV-1a hash `h` over more bytes: `fnv1a_extend(fnv1a(a), b) == fnv1a(a ++ b)`.
pub fn fnv1a_extend(mut h: u64, bytes: &[u8]) -> u64 {
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};

    #[derive(Debug, Serialize, Deserialize)]
    struct T {
        #[serde(with = "super::nonfinite")]
        a: f64,
        #[serde(with = "super::nonfinite_vec")]
        v: Vec<f64>,
    }

    #[test]
    fn nonfinite_values_round_trip_bit_for_bit() {
        let t = T {
            a: f64::NAN,
            v: vec![
                0.1 + 0.2,
                f64::INFINITY,
                f64::NEG_INFINITY,
                -0.0,
                1e-310,
                f64::MAX,
            ],
        };
        let text = serde_json::to_string(&t).unwrap();
        assert!(
            text.contains("\"NaN\"") && text.contains("\"-inf\""),
            "{text}"
        );
        let back: T = serde_json::from_str(&text).unwrap();
        assert!(back.a.is_nan());
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&back.v), bits(&t.v));
        // `null` (how serde_json writes a NaN by default) reads back as NaN.
        let n: T = serde_json::from_str(r#"{"a": null, "v": [null, 1.5]}"#).unwrap();
        assert!(n.a.is_nan() && n.v[0].is_nan() && n.v[1] == 1.5);
        let e = serde_json::from_str::<T>(r#"{"a": "nan?", "v": []}"#).unwrap_err();
        assert!(e.to_string().contains("\"nan?\""), "{e}");
    }

    #[test]
    fn fnv1a_matches_published_vectors() {
        // Test vectors of the FNV reference (Fowler, Noll, Vo): "" and "a".
        assert_eq!(super::fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(super::fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(super::fnv1a(b"foobar"), 0x8594_4171_f739_67e8);
        assert_eq!(
            super::fnv1a_extend(super::fnv1a(b"foo"), b"bar"),
            super::fnv1a(b"foobar")
        );
    }
}
