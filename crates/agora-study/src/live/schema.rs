//! JSON schemas of the fields whose Rust type says less than their values do (a `&'static
//! str` that is one of a few words), for agora-server's generated API document (feature
//! `openapi`).

use utoipa::openapi::schema::{ObjectBuilder, Type};
use utoipa::openapi::{Object, schema::SchemaType};

fn words(words: &[&str], nullable: bool, description: &str) -> Object {
    let ty = if nullable {
        SchemaType::from_iter([Type::String, Type::Null])
    } else {
        SchemaType::Type(Type::String)
    };
    let mut values: Vec<serde_json::Value> = words.iter().map(|w| (*w).into()).collect();
    if nullable {
        values.push(serde_json::Value::Null);
    }
    ObjectBuilder::new()
        .schema_type(ty)
        .enum_values(Some(values))
        .description(Some(description))
        .build()
}

/// [`super::PendingView::kind`].
pub(crate) fn query_kind() -> Object {
    words(
        &["compare", "evaluate", "group_vote", "group_rate"],
        false,
        "What is asked: a comparison, an evaluation, a group vote on a pair, or a group \
         rating of one option",
    )
}

/// [`super::plot::BeliefView::what`].
pub(crate) fn belief_what() -> Object {
    words(
        &["objective", "utility", "welfare"],
        true,
        "What the model is a belief about; null when the strategy has no model (yet)",
    )
}
