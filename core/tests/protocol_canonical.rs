//! JCS properties over arbitrary JSON: canonicalizing is idempotent and
//! blind to the key order and whitespace of its input.

use agentlang_core::protocol::canonical::{MAX_SAFE_INTEGER, from_slice_strict, to_jcs_bytes};
use proptest::prelude::*;
use serde_json::{Map, Value};

fn json_value() -> impl Strategy<Value = Value> {
    let safe = MAX_SAFE_INTEGER as i64;
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-safe..=safe).prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        ".{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(".{0,6}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// The same value with every object's keys in reverse order.
fn reversed(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .rev()
                .map(|(k, v)| (k.clone(), reversed(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(reversed).collect()),
        other => other.clone(),
    }
}

proptest! {
    #[test]
    fn jcs_is_idempotent_and_order_blind(value in json_value()) {
        let canonical = to_jcs_bytes(&value).unwrap();
        let reparsed = from_slice_strict(&canonical).unwrap();
        prop_assert_eq!(&to_jcs_bytes(&reparsed).unwrap(), &canonical);
        prop_assert_eq!(&to_jcs_bytes(&reversed(&value)).unwrap(), &canonical);
        let pretty = serde_json::to_vec_pretty(&value).unwrap();
        prop_assert_eq!(&to_jcs_bytes(&from_slice_strict(&pretty).unwrap()).unwrap(), &canonical);
    }
}
