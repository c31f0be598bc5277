//! RFC 8785 JSON Canonicalization Scheme (JCS): the byte form MoltSpeak
//! signatures are computed over.
//!
//! The canonicalization itself is `serde_json_canonicalizer`'s (sorted keys by
//! UTF-16 code units, ECMAScript number forms, minimal string escapes). This
//! module adds the I-JSON guard RFC 8785 relies on: JCS treats every number
//! as an IEEE 754 double, so an integer beyond ±(2^53 − 1) that no double
//! spells the same way (`9007199254740993`) would canonicalize differently
//! here (exactly) and in a JavaScript implementation (rounded). Such values
//! are refused rather than signed ambiguously; large integers a double does
//! spell identically (`214674745213530620`, which JCS itself emits for
//! large doubles) pass.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// The largest integer every JCS implementation represents exactly.
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CanonicalError {
    #[error(
        "{path}: integer {value} has no exact IEEE 754 double form, so its JCS form is ambiguous"
    )]
    UnsafeInteger { path: String, value: String },
    #[error("JCS serialization failed: {0}")]
    Serialize(String),
}

/// The JCS bytes of `value`.
pub fn to_jcs_bytes(value: &Value) -> Result<Vec<u8>, CanonicalError> {
    check_safe_numbers(value, "$")?;
    serde_json_canonicalizer::to_vec(value).map_err(|e| CanonicalError::Serialize(e.to_string()))
}

/// The JCS text of `value`.
pub fn to_jcs_string(value: &Value) -> Result<String, CanonicalError> {
    let bytes = to_jcs_bytes(value)?;
    // The canonicalizer writes UTF-8 only; a failure here would be its bug.
    String::from_utf8(bytes).map_err(|e| CanonicalError::Serialize(e.to_string()))
}

fn check_safe_numbers(value: &Value, path: &str) -> Result<(), CanonicalError> {
    match value {
        Value::Number(n) => {
            let beyond_safe = match (n.as_u64(), n.as_i64()) {
                (Some(u), _) => u > MAX_SAFE_INTEGER,
                (None, Some(i)) => i.unsigned_abs() > MAX_SAFE_INTEGER,
                // Floats are doubles already: JCS formats them exactly.
                (None, None) => false,
            };
            if beyond_safe && !spelled_alike_as_double(n) {
                return Err(CanonicalError::UnsafeInteger {
                    path: path.to_owned(),
                    value: n.to_string(),
                });
            }
            Ok(())
        }
        Value::Array(items) => items
            .iter()
            .enumerate()
            .try_for_each(|(i, v)| check_safe_numbers(v, &format!("{path}[{i}]"))),
        Value::Object(map) => map
            .iter()
            .try_for_each(|(k, v)| check_safe_numbers(v, &format!("{path}.{k}"))),
        Value::Null | Value::Bool(_) | Value::String(_) => Ok(()),
    }
}

/// Parses JSON refusing duplicate object keys. RFC 8785 is defined over
/// I-JSON, which forbids them, and they are a signature hazard: parsers
/// disagree on which duplicate wins, so a signer and a reader could see
/// different messages in the same bytes. Nesting depth stays bounded by
/// serde_json's recursion limit.
pub fn from_slice_strict(bytes: &[u8]) -> Result<Value, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let StrictValue(value) = StrictValue::deserialize(&mut de)?;
    de.end()?;
    Ok(value)
}

struct StrictValue(Value);

impl<'de> Deserialize<'de> for StrictValue {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(StrictVisitor).map(StrictValue)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        // serde_json never hands over a non-finite float.
        Ok(Value::from(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(StrictValue(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        let mut map = Map::new();
        while let Some(key) = access.next_key::<String>()? {
            let StrictValue(value) = access.next_value()?;
            if map.contains_key(&key) {
                return Err(de::Error::custom(format!("duplicate key {key:?}")));
            }
            map.insert(key, value);
        }
        Ok(Value::Object(map))
    }
}

/// Whether reading `n` as a double and writing it back the ECMAScript way
/// (as a JavaScript JCS implementation would) gives the same digits.
fn spelled_alike_as_double(n: &serde_json::Number) -> bool {
    n.as_f64()
        .and_then(|f| serde_json_canonicalizer::to_string(&f).ok())
        .is_some_and(|text| text == n.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_are_sorted_and_whitespace_dropped() {
        let v: Value = serde_json::from_str(r#"{ "b": 1, "a": { "d": [1, 2], "c": null } }"#)
            .expect("valid JSON");
        assert_eq!(
            to_jcs_string(&v).unwrap(),
            r#"{"a":{"c":null,"d":[1,2]},"b":1}"#
        );
    }

    #[test]
    fn strict_parsing_refuses_duplicate_keys_at_any_depth() {
        let err = from_slice_strict(br#"{"a": {"b": 1, "b": 2}}"#).unwrap_err();
        assert!(err.to_string().contains("duplicate key \"b\""), "{err}");
        assert!(from_slice_strict(br#"{"cls": "pub", "cls": "pii"}"#).is_err());
        assert!(from_slice_strict(br#"{"a": 1} x"#).is_err());
        let ok = from_slice_strict(br#"{"b": [1, -2, 2.5, "s", null, true], "a": {}}"#).unwrap();
        assert_eq!(ok, json!({"b": [1, -2, 2.5, "s", null, true], "a": {}}));
        // Key order as written is kept, like serde_json with preserve_order.
        assert_eq!(
            ok.as_object().unwrap().keys().collect::<Vec<_>>(),
            ["b", "a"]
        );
    }

    #[test]
    fn unsafe_integers_are_refused_with_their_path() {
        let v = json!({"p": {"n": [1, 9_007_199_254_740_993_u64]}});
        assert_eq!(
            to_jcs_bytes(&v),
            Err(CanonicalError::UnsafeInteger {
                path: "$.p.n[1]".into(),
                value: "9007199254740993".into()
            })
        );
        let negative = json!({"n": -9_007_199_254_740_993_i64});
        assert!(to_jcs_bytes(&negative).is_err());
        // Beyond 2^53 but spelled the same by a double: unambiguous.
        for n in [9_007_199_254_740_992_u64, 214_674_745_213_530_620] {
            assert_eq!(to_jcs_string(&json!(n)).unwrap(), n.to_string());
        }
        let max = json!({"n": MAX_SAFE_INTEGER, "m": -(MAX_SAFE_INTEGER as i64)});
        assert_eq!(
            to_jcs_string(&max).unwrap(),
            r#"{"m":-9007199254740991,"n":9007199254740991}"#
        );
    }
}
