//! The envelope every strategy snapshot shares ([`crate::Strategy::snapshot`]): the
//! method's name and the format of its state, checked on restoring, around the state itself.

use agora_core::{Error, Result};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// `state` of `method` in format `format`, as a snapshot.
pub(crate) fn write<T: Serialize>(method: &str, format: u32, state: &T) -> Result<Option<Value>> {
    let state = serde_json::to_value(state)
        .map_err(|e| Error::State(format!("cannot write the snapshot: {e}")))?;
    Ok(Some(serde_json::json!({
        "method": method,
        "format": format,
        "state": state,
    })))
}

/// The state of a snapshot [`write`] made for `method` in format `format`; errors name a
/// snapshot of another method or format, or one that does not parse.
pub(crate) fn read<T: DeserializeOwned>(method: &str, format: u32, snapshot: &Value) -> Result<T> {
    let (m, f) = (&snapshot["method"], &snapshot["format"]);
    if m.as_str() != Some(method) || f.as_u64() != Some(u64::from(format)) {
        return Err(Error::invalid(
            "snapshot",
            format!("a snapshot of `{m}` format {f}; this is `{method}` format {format}"),
        ));
    }
    T::deserialize(&snapshot["state"]).map_err(|e| Error::invalid("snapshot", e.to_string()))
}

/// The error of restoring onto a strategy that has already asked or been told something.
pub(crate) fn not_fresh() -> Error {
    Error::State("restore a snapshot onto a freshly built strategy".into())
}
