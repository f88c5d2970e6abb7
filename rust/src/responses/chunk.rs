//! Reading one Responses stream event, the Responses decoder's reader (twin of
//! python/hydra_proxy/responses/chunk.py): an event is read whole as a tree, and a field of
//! the wrong type counts as missing.

use serde_json::{Map, Value};

static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();

fn empty() -> &'static Map<String, Value> {
    EMPTY.get_or_init(Map::new)
}

pub fn get_str<'a>(obj: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    obj.get(key).and_then(Value::as_str)
}

pub fn get_dict<'a>(obj: &'a Map<String, Value>, key: &str) -> &'a Map<String, Value> {
    match obj.get(key).and_then(Value::as_object) {
        Some(map) => map,
        None => empty(),
    }
}

pub fn get_list<'a>(obj: &'a Map<String, Value>, key: &str) -> &'a [Value] {
    obj.get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

pub fn uint(obj: &Map<String, Value>, key: &str) -> Option<u64> {
    obj.get(key).and_then(Value::as_u64)
}

pub fn texts<'a>(parts: &'a [Value], kind: &str) -> Vec<&'a str> {
    parts
        .iter()
        .filter_map(Value::as_object)
        .filter(|part| get_str(part, "type") == Some(kind))
        .filter_map(|part| get_str(part, "text"))
        .collect()
}
