//! The scanner-based reader against two oracles, over recorded chunks, single-byte
//! mutations of them (every deletion, truncation and, in turn, insertion of special bytes),
//! their values swapped for others of other types, their strings swapped for tricky ones,
//! and pseudo-random chunk-like texts; each also read by a [`ChunkReader`] that read
//! another text first, so that its envelope and template shortcuts are taken or refused:
//! - `python`: a transliteration of the Python twin's `_read_chunk` over `serde_json::Value`
//!   (the specification: the two transducers must agree byte for byte). It must agree
//!   exactly, up to where serde_json's `Value` is not orjson (see `python`);
//! - `reference`: the serde-based reader this one replaced, with the classification
//!   stream.rs did around it. It agrees except on inputs where it disagreed with the Python
//!   twin (a shape error hidden by a later duplicate key, `-0`, lone surrogates or overflowing
//!   numbers inside skipped values); those are counted and must all be such cases.

use std::borrow::Cow;

use serde_json::Value;

use super::reference;
use super::{read_chunk, Chunk, ChunkReader, ReadError};

// -- a comparable form of a reader's result ----------------------------------------------------

type Call = (Option<u64>, Option<String>, Option<String>, Option<String>);

#[derive(Debug, Clone, PartialEq)]
struct NDelta {
    reasoning: Option<String>,
    content: Option<String>,
    refusal: Option<String>,
    tool_calls: Vec<Call>,
}

/// (prompt_tokens, completion_tokens, cached_tokens, reasoning_tokens)
type Usage4 = (Option<u64>, Option<u64>, Option<u64>, Option<u64>);

#[derive(Debug, Clone, PartialEq)]
struct NChunk {
    has_error: bool,
    usage: Option<Usage4>,
    choices: Vec<(Option<NDelta>, Option<String>)>,
}

#[derive(Debug, Clone, PartialEq)]
enum Outcome {
    Invalid,
    BadShape { has_error: bool },
    Ok(NChunk),
}

impl Outcome {
    fn class(&self) -> &'static str {
        match self {
            Outcome::Invalid => "invalid",
            Outcome::BadShape { .. } => "bad shape",
            Outcome::Ok(_) => "ok",
        }
    }
}

fn own(text: Option<&Cow<'_, str>>, json: &str) -> Option<String> {
    if let Some(Cow::Owned(_)) = text {
        assert!(
            json.contains('\\'),
            "allocated a string without escapes: {json:?}"
        );
    }
    text.map(ToString::to_string)
}

fn norm(chunk: &Chunk<'_>, json: &str) -> NChunk {
    NChunk {
        has_error: chunk.has_error,
        usage: chunk.usage.map(|u| {
            (
                u.prompt_tokens,
                u.completion_tokens,
                u.cached_tokens,
                u.reasoning_tokens,
            )
        }),
        choices: chunk
            .choices
            .iter()
            .map(|c| {
                let delta = c.delta.as_ref().map(|d| NDelta {
                    reasoning: {
                        own(d.reasoning_content.as_ref(), json);
                        own(d.reasoning_fallback.as_ref(), json);
                        d.reasoning().map(str::to_owned)
                    },
                    content: own(d.content.as_ref(), json),
                    refusal: own(d.refusal.as_ref(), json),
                    tool_calls: d
                        .tool_calls
                        .iter()
                        .map(|t| {
                            (
                                t.index,
                                own(t.id.as_ref(), json),
                                own(t.name.as_ref(), json),
                                own(t.arguments.as_ref(), json),
                            )
                        })
                        .collect(),
                });
                (delta, own(c.finish_reason.as_ref(), json))
            })
            .collect(),
    }
}

fn outcome(result: Result<Chunk<'_>, ReadError>, json: &str) -> Outcome {
    match result {
        Ok(chunk) => Outcome::Ok(norm(&chunk, json)),
        Err(ReadError::InvalidJson) => Outcome::Invalid,
        Err(ReadError::BadShape { has_error }) => Outcome::BadShape { has_error },
    }
}

fn read_with(reader: &mut ChunkReader, json: &str) -> Outcome {
    let mut chunk = Chunk::default();
    let result = reader.read(json, &mut chunk).map(|()| chunk);
    outcome(result, json)
}

fn mine(json: &str) -> Outcome {
    outcome(read_chunk(json), json)
}

/// The old reader and the classification stream.rs did around it.
fn old(json: &str) -> Outcome {
    use serde_json::error::Category;
    match reference::read_chunk(json) {
        Ok(c) => Outcome::Ok(NChunk {
            has_error: c.has_error,
            usage: c.usage.map(|u| {
                (
                    u.prompt_tokens,
                    u.completion_tokens,
                    u.cached_tokens,
                    u.reasoning_tokens,
                )
            }),
            choices: c
                .choices
                .iter()
                .map(|c| {
                    let delta = c.delta.as_ref().map(|d| NDelta {
                        reasoning: d.reasoning.as_ref().map(ToString::to_string),
                        content: d.content.as_ref().map(ToString::to_string),
                        refusal: d.refusal.as_ref().map(ToString::to_string),
                        tool_calls: d
                            .tool_calls
                            .iter()
                            .map(|t| {
                                let s =
                                    |x: &Option<Cow<'_, str>>| x.as_ref().map(ToString::to_string);
                                (t.index, s(&t.id), s(&t.name), s(&t.arguments))
                            })
                            .collect(),
                    });
                    (delta, c.finish_reason.as_ref().map(ToString::to_string))
                })
                .collect(),
        }),
        Err(err) if err.classify() == Category::Data => match serde_json::from_str::<Value>(json) {
            Ok(value) => Outcome::BadShape {
                has_error: value.get("error").is_some_and(|e| !e.is_null()),
            },
            Err(_) => Outcome::Invalid,
        },
        Err(_) => Outcome::Invalid,
    }
}

// -- the Python twin, transliterated over serde_json::Value ------------------------------------
// Where Value is not orjson: it nests at most 128 deep (orjson 1024; the generated texts stay
// shallower); it reads `-0` as a float (orjson: the integer 0; `compare` rewrites `-0` first);
// its float parsing is not correctly rounded at the very edge of the f64 range (never
// generated).

struct BadShape;

fn uint(value: Option<&Value>) -> Option<u64> {
    value.and_then(Value::as_u64)
}

fn opt_str(obj: &serde_json::Map<String, Value>, key: &str) -> Result<Option<String>, BadShape> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(BadShape),
    }
}

fn opt_dict<'v>(
    obj: &'v serde_json::Map<String, Value>,
    key: &str,
) -> Result<Option<&'v serde_json::Map<String, Value>>, BadShape> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(m)) => Ok(Some(m)),
        Some(_) => Err(BadShape),
    }
}

fn opt_list<'v>(
    obj: &'v serde_json::Map<String, Value>,
    key: &str,
) -> Result<&'v [Value], BadShape> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(&[]),
        Some(Value::Array(a)) => Ok(a),
        Some(_) => Err(BadShape),
    }
}

fn opt_index(obj: &serde_json::Map<String, Value>, key: &str) -> Result<Option<u64>, BadShape> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        value => uint(value).map(Some).ok_or(BadShape),
    }
}

fn py_read_chunk(chunk: &Value) -> Result<NChunk, BadShape> {
    let Value::Object(chunk) = chunk else {
        return Err(BadShape);
    };
    let usage = match chunk.get("usage") {
        Some(Value::Object(u)) => Some(u),
        _ => match chunk.get("x_groq") {
            Some(Value::Object(g)) => match g.get("usage") {
                Some(Value::Object(u)) => Some(u),
                _ => None,
            },
            _ => None,
        },
    };
    let usage = usage.map(|u| {
        let details = match u.get("prompt_tokens_details") {
            Some(Value::Object(d)) => uint(d.get("cached_tokens")),
            _ => None,
        };
        let reasoning = match u.get("completion_tokens_details") {
            Some(Value::Object(d)) => uint(d.get("reasoning_tokens")),
            _ => None,
        };
        (
            uint(u.get("prompt_tokens")),
            uint(u.get("completion_tokens")),
            details.or(uint(u.get("prompt_cache_hit_tokens"))),
            reasoning,
        )
    });
    let mut read = Vec::new();
    for choice in opt_list(chunk, "choices")? {
        let Value::Object(choice) = choice else {
            return Err(BadShape);
        };
        let index = opt_index(choice, "index")?;
        let delta = opt_dict(choice, "delta")?;
        let finish_reason = opt_str(choice, "finish_reason")?;
        let delta = match delta {
            Some(delta) => Some(py_read_delta(delta)?),
            None => None,
        };
        if index.unwrap_or(0) == 0 {
            read.push((delta, finish_reason));
        }
    }
    Ok(NChunk {
        has_error: chunk.get("error").is_some_and(|e| !e.is_null()),
        usage,
        choices: read,
    })
}

fn py_read_delta(delta: &serde_json::Map<String, Value>) -> Result<NDelta, BadShape> {
    let mut reasoning = opt_str(delta, "reasoning_content")?;
    let fallback = opt_str(delta, "reasoning")?;
    if reasoning.as_deref().unwrap_or("").is_empty() {
        reasoning = fallback;
    }
    let mut calls = Vec::new();
    for call in opt_list(delta, "tool_calls")? {
        let Value::Object(call) = call else {
            return Err(BadShape);
        };
        let upstream_index = opt_index(call, "index")?;
        let tool_id = opt_str(call, "id")?;
        let function = opt_dict(call, "function")?;
        let (mut name, mut arguments) = (None, None);
        if let Some(function) = function {
            name = opt_str(function, "name")?;
            arguments = opt_str(function, "arguments")?;
        }
        calls.push((upstream_index, tool_id, name, arguments));
    }
    Ok(NDelta {
        reasoning,
        content: opt_str(delta, "content")?,
        refusal: opt_str(delta, "refusal")?,
        tool_calls: calls,
    })
}

fn python(json: &str) -> Outcome {
    let Ok(value) = serde_json::from_str::<Value>(json) else {
        return Outcome::Invalid;
    };
    match py_read_chunk(&value) {
        Ok(chunk) => Outcome::Ok(chunk),
        Err(BadShape) => Outcome::BadShape {
            has_error: value.get("error").is_some_and(|e| !e.is_null()),
        },
    }
}

/// `-0` integer tokens rewritten as ` 0` (what orjson reads them as). The class of the
/// result is unchanged even where the `-0` stood in a string (its content changes) or in no
/// valid place (still invalid).
fn minus_zero_as_zero(json: &str) -> Cow<'_, str> {
    let b = json.as_bytes();
    let hits: Vec<usize> = (0..b.len())
        .filter(|&i| {
            b[i] == b'-'
                && b.get(i + 1) == Some(&b'0')
                && !matches!(b.get(i + 2), Some(b'0'..=b'9' | b'.' | b'e' | b'E'))
                && !(i > 0 && matches!(b[i - 1], b'e' | b'E'))
        })
        .collect();
    if hits.is_empty() {
        return Cow::Borrowed(json);
    }
    let mut out = b.to_vec();
    for i in hits {
        out[i] = b' ';
    }
    Cow::Owned(String::from_utf8(out).unwrap())
}

#[derive(Default)]
struct Tally {
    cases: usize,
    by_class: std::collections::BTreeMap<&'static str, usize>,
    old_differs: usize,
    spliced: usize,
    swapped: usize,
    template_hits: usize,
    examples: Vec<String>,
}

/// Compare on one text; `primed`: the text a ChunkReader read before it (its envelope).
fn compare(json: &str, primed: Option<&str>, tally: &mut Tally) {
    let got = mine(json);
    // The reader with an envelope in memory reads the same.
    if let Some(primed) = primed {
        let mut reader = ChunkReader::default();
        read_with(&mut reader, primed);
        if reader.template.read(json, &mut Chunk::default()) {
            tally.template_hits += 1;
        }
        assert_eq!(
            read_with(&mut reader, json),
            got,
            "primed by {primed:?}: {json:?}"
        );
    }
    let normalized = minus_zero_as_zero(json);
    let expected = python(&normalized);
    if let Cow::Owned(normalized) = &normalized {
        assert_eq!(got.class(), expected.class(), "{json:?}");
        assert_eq!(mine(normalized), expected, "{normalized:?}");
    } else {
        assert_eq!(got, expected, "{json:?}");
    }
    tally.cases += 1;
    *tally.by_class.entry(got.class()).or_default() += 1;
    let old = old(json);
    if old != got {
        tally.old_differs += 1;
        assert!(
            explains_old_difference(json),
            "differs from the old reader for no known reason: {json:?}\nold: {old:?}\nnew: {got:?}"
        );
        // CHUNK_DIFFS=1 cargo test ... -- --nocapture lists them all.
        if std::env::var_os("CHUNK_DIFFS").is_some() {
            eprintln!("OLD DIFF {json:?}\n  old {old:?}\n  new {got:?}");
        }
        if tally.examples.len() < 8 {
            tally.examples.push(json.chars().take(160).collect());
        }
    }
}

/// Whether an input is one where the old reader disagreed with the Python twin: it holds
/// a repeated key, `-0`, a lone surrogate escape, or a number that overflows an f64 (the
/// old reader skipped unknown values without checking the last two).
fn explains_old_difference(json: &str) -> bool {
    if minus_zero_as_zero(json) != json {
        return true;
    }
    let Ok(value) = serde_json::from_str::<Value>(json) else {
        // serde_json rejects what the old reader skipped over (the Python twin rejects it).
        return true;
    };
    let mut keys = 0;
    count_keys(&value, &mut keys);
    // Fewer distinct keys in the parsed value than in the text: a key was repeated.
    let mut scanner = crate::json::scan::Scanner::new(json);
    let mut raw = 0;
    count_raw_keys(&mut scanner, &mut raw);
    raw > keys
}

fn count_keys(value: &Value, n: &mut usize) {
    match value {
        Value::Object(m) => {
            *n += m.len();
            m.values().for_each(|v| count_keys(v, n));
        }
        Value::Array(a) => a.iter().for_each(|v| count_keys(v, n)),
        _ => {}
    }
}

fn count_raw_keys(s: &mut crate::json::scan::Scanner<'_>, n: &mut usize) {
    match s.ws() {
        b'{' => {
            s.pos += 1;
            s.members(|s, _| {
                *n += 1;
                count_raw_keys(s, n);
                Ok(())
            })
            .unwrap();
        }
        b'[' => {
            s.pos += 1;
            s.elements(|s| {
                count_raw_keys(s, n);
                Ok(())
            })
            .unwrap();
        }
        _ => s.skip_value(0).unwrap(),
    }
}

// -- inputs ----------------------------------------------------------------------------------

/// Every `data:` payload of the recorded Chat Completions streams, stream by stream.
fn recorded() -> Vec<Vec<String>> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/chat");
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            matches!(
                p.extension().and_then(|e| e.to_str()),
                Some("sse" | "jsonl")
            )
        })
        .collect();
    names.sort();
    let streams: Vec<Vec<String>> = names
        .iter()
        .map(|path| {
            let text = std::fs::read_to_string(path).unwrap();
            let jsonl = path.extension().unwrap() == "jsonl";
            text.lines()
                .filter_map(|line| {
                    if jsonl {
                        Some(line)
                    } else {
                        line.strip_prefix("data:")
                            .map(|d| d.strip_prefix(' ').unwrap_or(d))
                    }
                })
                .filter(|d| !d.trim().is_empty() && d.trim() != "[DONE]")
                .map(str::to_owned)
                .collect()
        })
        .collect();
    assert!(streams.len() >= 10 && streams.iter().map(Vec::len).sum::<usize>() > 300);
    streams
}

/// A payload with the contents of its strings dropped: payloads of one skeleton exercise
/// the same paths, so only one of each is mutated byte by byte.
fn skeleton(json: &str) -> String {
    let mut out = String::new();
    let mut in_string = false;
    let mut escaped = false;
    for c in json.chars() {
        if in_string {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
                out.push('"');
            }
        } else {
            if c == '"' {
                in_string = true;
            }
            out.push(c);
        }
    }
    out
}

const INSERTED: [&str; 13] = [
    "\"", "\\", ",", "{", "}", "[", "]", ":", "0", "-", " ", "n", "\u{1}",
];

const REPLACEMENTS: [&str; 10] = [
    "null", "1", "-1", "1.5", "\"s\"", "[]", "{}", "[{}]", "[null]", "true",
];

fn mutations(json: &str) -> Vec<String> {
    let b = json.as_bytes();
    let lossy = |v: Vec<u8>| String::from_utf8_lossy(&v).into_owned();
    let mut out = Vec::new();
    // Each member's value replaced by one of another type (the ends of a value are found
    // with the scanner under test; the oracle judges the result all the same).
    for (i, _) in json.match_indices("\":") {
        let mut s = crate::json::scan::Scanner::new(json);
        s.pos = i + 2;
        if s.skip_value(1).is_ok() {
            for r in REPLACEMENTS {
                out.push(format!("{}{}{}", &json[..i + 2], r, &json[s.pos..]));
            }
        }
    }
    for i in 0..b.len() {
        out.push(lossy(b[..i].to_vec()));
        let mut deleted = b.to_vec();
        deleted.remove(i);
        out.push(lossy(deleted));
        // Three of the special bytes at each position, in turn.
        for k in 0..3 {
            let ins = INSERTED[(i * 3 + k) % INSERTED.len()];
            let mut inserted = b.to_vec();
            inserted.splice(i..i, ins.bytes());
            out.push(lossy(inserted));
        }
    }
    out
}

#[test]
fn oracle_on_recorded_chunks_and_their_mutations() {
    let mut tally = Tally::default();
    let mut skeletons = std::collections::HashSet::new();
    let mut stream_hits = 0;
    for stream in recorded() {
        // A stream read by one ChunkReader, as the transducer does.
        let mut reader = ChunkReader::default();
        for json in &stream {
            if reader.template.read(json, &mut Chunk::default()) {
                stream_hits += 1;
            }
            assert_eq!(read_with(&mut reader, json), mine(json), "{json:?}");
            compare(json, None, &mut tally);
            if skeletons.insert(skeleton(json)) {
                for mutated in mutations(json) {
                    compare(&mutated, Some(json), &mut tally);
                }
            }
        }
    }
    eprintln!(
        "recorded: {} cases {:?}; {} skeletons; {} chunks fit the previous one's template, \
         {} mutations their original's; the old reader differs on {}: {:#?}",
        tally.cases,
        tally.by_class,
        skeletons.len(),
        stream_hits,
        tally.template_hits,
        tally.old_differs,
        tally.examples
    );
    assert!(stream_hits > 250 && tally.template_hits > 1_000);
    for (class, least) in [("ok", 10_000), ("bad shape", 1_000), ("invalid", 10_000)] {
        assert!(
            tally.by_class.get(class).copied().unwrap_or(0) >= least,
            "{class}"
        );
    }
}

// -- pseudo-random chunk-like texts -----------------------------------------------------------

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
    fn pick<'x>(&mut self, items: &[&'x str]) -> &'x str {
        items[self.below(items.len())]
    }
}

struct Gen {
    rng: Rng,
    out: String,
    /// Percent of values given a random type instead of the expected one.
    wrong: usize,
}

const KEYS: [&str; 30] = [
    "choices",
    "index",
    "delta",
    "finish_reason",
    "content",
    "reasoning_content",
    "reasoning",
    "refusal",
    "tool_calls",
    "id",
    "function",
    "name",
    "arguments",
    "usage",
    "prompt_tokens",
    "completion_tokens",
    "prompt_tokens_details",
    "cached_tokens",
    "prompt_cache_hit_tokens",
    "x_groq",
    "error",
    "object",
    "model",
    "type",
    "role",
    "logprobs",
    "created",
    "",
    "é",
    "k",
];

const NUMBERS: [&str; 25] = [
    "0",
    "1",
    "2",
    "7",
    "42",
    "-1",
    "-0",
    "-0.0",
    "0.0",
    "1.5",
    "-2.25",
    "1e2",
    "1E+2",
    "2e-3",
    "1.0",
    "18446744073709551615",
    "18446744073709551616",
    "9223372036854775808",
    "-9223372036854775808",
    "-9223372036854775809",
    "123456789012345678901234567890",
    "1e308",
    "1.7976931348623157e308",
    "0e999999999999",
    "1e-400",
];

/// Numbers at the edge of the f64 range: the first three overflow.
const EDGE_NUMBERS: [&str; 9] = [
    "1e309",
    "-1e400",
    "100e307",
    "10e307",
    "0.000001e310",
    "4.5e-324",
    "1e-99999999999999999999",
    "12345678901234567890123e285",
    "-1.7976931348623157e308",
];

const PIECES: [&str; 32] = [
    "a",
    "The",
    " quick",
    "word",
    " ",
    "é",
    "😀",
    "日本",
    "\\n",
    "\\\"",
    "\\\\",
    "\\/",
    "\\b",
    "\\f",
    "\\r",
    "\\t",
    "\\u0041",
    "\\u00e9",
    "\\u00E9",
    "\\u2028",
    "\\ud83d\\ude00",
    "\\uD83D\\uDE00",
    "\\u0000",
    "\\u001f",
    "\u{7f}",
    "{\\\"a\\\": 1}",
    "call_0",
    "stop",
    "null",
    "\\ud800",
    "\\udc00",
    "\\ud800\\u0041",
];

const RARE_PIECES: [&str; 5] = ["\u{1}", "\\x", "\\u12", "\u{1f}", "\t"];

impl Gen {
    fn ws(&mut self) {
        if self.rng.chance(8) {
            let w = self.rng.pick(&[" ", "\n", "\t", "\r", "  \n "]);
            self.out.push_str(w);
        }
    }

    fn string(&mut self) {
        self.out.push('"');
        for _ in 0..self.rng.below(5) {
            let piece = if self.rng.chance(99) {
                // The last three pieces are lone surrogates: rarer.
                let n = if self.rng.chance(97) {
                    PIECES.len() - 3
                } else {
                    PIECES.len()
                };
                PIECES[self.rng.below(n)]
            } else {
                self.rng.pick(&RARE_PIECES)
            };
            self.out.push_str(piece);
        }
        self.out.push('"');
    }

    fn key(&mut self, name: &str) {
        if !name.is_empty() && self.rng.chance(5) {
            // The same key with its first character escaped.
            let mut chars = name.chars();
            let first = chars.next().unwrap();
            let escaped = if self.rng.chance(50) {
                format!("\\u{:04x}", first as u32)
            } else {
                format!("\\u{:04X}", first as u32)
            };
            self.out.push('"');
            self.out.push_str(&escaped);
            self.out.push_str(chars.as_str());
            self.out.push('"');
        } else {
            self.out.push('"');
            self.out.push_str(name);
            self.out.push('"');
        }
    }

    fn number(&mut self) {
        let n = if self.rng.chance(95) {
            self.rng.pick(&NUMBERS)
        } else {
            self.rng.pick(&EDGE_NUMBERS)
        };
        self.out.push_str(n);
    }

    fn any(&mut self, depth: usize) {
        self.ws();
        let containers = if depth < 6 { 8 } else { 6 };
        match self.rng.below(containers) {
            0 => self.out.push_str("null"),
            1 => self
                .out
                .push_str(if self.rng.chance(50) { "true" } else { "false" }),
            2 | 3 => self.number(),
            4 | 5 => self.string(),
            6 => self.list(depth, Gen::any),
            _ => {
                let n = self.rng.below(4);
                self.object(n, |g| {
                    let k = g.rng.pick(&KEYS);
                    g.key(k);
                    g.ws();
                    g.out.push(':');
                    g.any(depth + 1);
                });
            }
        }
        self.ws();
    }

    fn deep(&mut self) {
        // Deep nesting, kept below serde_json's 128 (the oracle's limit).
        let n = 1 + self.rng.below(110);
        let open: Vec<bool> = (0..n).map(|_| self.rng.chance(50)).collect();
        for &object in &open {
            self.out.push_str(if object { "{\"k\":" } else { "[" });
        }
        self.any(10);
        for &object in open.iter().rev() {
            self.out.push(if object { '}' } else { ']' });
        }
    }

    fn list(&mut self, depth: usize, mut item: impl FnMut(&mut Gen, usize)) {
        self.out.push('[');
        let n = self.rng.below(4);
        for i in 0..n {
            if i > 0 {
                self.out.push(',');
            }
            item(self, depth + 1);
        }
        self.ws();
        self.out.push(']');
    }

    fn object(&mut self, n: usize, mut member: impl FnMut(&mut Gen)) {
        self.out.push('{');
        for i in 0..n {
            if i > 0 {
                self.out.push(',');
            }
            self.ws();
            member(self);
            self.ws();
        }
        self.out.push('}');
    }

    /// A value of the expected kind, or (`wrong` percent) of any kind.
    fn typed(&mut self, depth: usize, right: impl FnOnce(&mut Gen)) {
        if self.rng.chance(self.wrong) {
            if self.rng.chance(3) {
                self.deep();
            } else {
                self.any(depth);
            }
        } else {
            self.ws();
            right(self);
            self.ws();
        }
    }

    fn opt_string(&mut self, depth: usize) {
        self.typed(depth, |g| {
            if g.rng.chance(15) {
                g.out.push_str("null");
            } else {
                g.string();
            }
        });
    }

    fn index(&mut self, depth: usize) {
        self.typed(depth, |g| {
            let v = g.rng.pick(&["0", "0", "0", "1", "2", "null", "-0"]);
            g.out.push_str(v);
        });
    }

    fn members(&mut self, depth: usize, names: &[&str], value: impl Fn(&mut Gen, &str, usize)) {
        // Members drawn with replacement: repeated keys happen.
        let n = self.rng.below(names.len() + 2);
        self.object(n, |g| {
            let name = if g.rng.chance(10) {
                g.rng.pick(&KEYS)
            } else {
                g.rng.pick(names)
            };
            g.key(name);
            g.ws();
            g.out.push(':');
            value(g, name, depth + 1);
        });
    }

    fn chunk(&mut self) {
        self.ws();
        if self.rng.chance(3) {
            self.any(0);
            return;
        }
        let names = [
            "id",
            "object",
            "created",
            "model",
            "system_fingerprint",
            "choices",
            "choices",
            "choices",
            "usage",
            "x_groq",
            "error",
        ];
        self.members(0, &names, |g, name, depth| match name {
            "choices" => g.typed(depth, |g| g.list(depth, Gen::choice)),
            "usage" => g.typed(depth, |g| g.usage(depth)),
            "x_groq" => g.typed(depth, |g| {
                g.members(depth, &["usage", "id"], |g, n, d| {
                    if n == "usage" {
                        g.typed(d, |g| g.usage(d));
                    } else {
                        g.any(d);
                    }
                });
            }),
            "error" => {
                if g.rng.chance(70) {
                    g.out.push_str("null");
                } else {
                    g.any(depth);
                }
            }
            _ => g.any(depth),
        });
        self.ws();
    }

    fn choice(&mut self, depth: usize) {
        self.typed(depth, |g| {
            let names = ["index", "delta", "delta", "finish_reason", "logprobs"];
            g.members(depth, &names, |g, name, d| match name {
                "index" => g.index(d),
                "delta" => g.typed(d, |g| g.delta(d)),
                "finish_reason" => g.opt_string(d),
                _ => g.any(d),
            });
        });
    }

    fn delta(&mut self, depth: usize) {
        let names = [
            "role",
            "content",
            "content",
            "reasoning_content",
            "reasoning",
            "refusal",
            "tool_calls",
        ];
        self.members(depth, &names, |g, name, d| match name {
            "tool_calls" => g.typed(d, |g| g.list(d, Gen::tool_call)),
            "role" => g.any(d),
            _ => g.opt_string(d),
        });
    }

    fn tool_call(&mut self, depth: usize) {
        self.typed(depth, |g| {
            let names = ["index", "id", "type", "function", "function"];
            g.members(depth, &names, |g, name, d| match name {
                "index" => g.index(d),
                "id" => g.opt_string(d),
                "function" => g.typed(d, |g| {
                    g.members(d, &["name", "arguments"], |g, _, d| g.opt_string(d));
                }),
                _ => g.any(d),
            });
        });
    }

    fn usage(&mut self, depth: usize) {
        let names = [
            "prompt_tokens",
            "completion_tokens",
            "total_tokens",
            "prompt_tokens_details",
            "prompt_cache_hit_tokens",
            "completion_tokens_details",
        ];
        self.members(depth, &names, |g, name, d| match name {
            "prompt_tokens_details" => g.typed(d, |g| {
                g.members(d, &["cached_tokens", "audio_tokens"], |g, _, d| {
                    g.typed(d, Gen::number);
                });
            }),
            "completion_tokens_details" => g.typed(d, |g| {
                g.members(d, &["reasoning_tokens", "audio_tokens"], |g, _, d| {
                    g.typed(d, Gen::number);
                });
            }),
            _ => g.typed(d, Gen::number),
        });
    }
}

fn mutate(rng: &mut Rng, text: &str) -> String {
    let mut b = text.as_bytes().to_vec();
    for _ in 0..=rng.below(2) {
        if b.is_empty() {
            break;
        }
        let i = rng.below(b.len());
        match rng.below(3) {
            0 => {
                b.remove(i);
            }
            1 => {
                let ins = INSERTED[rng.below(INSERTED.len())];
                b.splice(i..i, ins.bytes());
            }
            _ => b.truncate(i),
        }
    }
    String::from_utf8_lossy(&b).into_owned()
}

#[test]
fn oracle_on_generated_chunks() {
    let mut tally = Tally::default();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut previous = String::new();
    for case in 0..30_000 {
        let mut gen = Gen {
            rng: Rng(rng.next() | 1),
            out: String::new(),
            wrong: [2, 5, 15][case % 3],
        };
        gen.chunk();
        let text = if rng.chance(15) {
            mutate(&mut rng, &gen.out)
        } else {
            gen.out
        };
        compare(&text, Some(&previous), &mut tally);
        // The same members after the envelope the reader remembers from the previous text.
        let mut reader = ChunkReader::default();
        let previous_ok = read_with(&mut reader, &previous).class() == "ok";
        if previous_ok && !reader.prefix.is_empty() {
            if let Some(members) = text
                .trim_start_matches([' ', '\n', '\t', '\r'])
                .strip_prefix('{')
            {
                let spliced = String::from_utf8(reader.prefix.clone()).unwrap() + members;
                compare(&spliced, Some(&previous), &mut tally);
                tally.spliced += 1;
            }
        }
        // The previous text with other strings in its template's holes.
        if previous_ok && !reader.template.text.is_empty() {
            let mut swapped = String::new();
            let mut from = 0;
            for hole in &reader.template.holes {
                swapped.push_str(&previous[from..hole.start]);
                let mut gen = Gen {
                    rng: Rng(rng.next() | 1),
                    out: String::new(),
                    wrong: 0,
                };
                gen.string();
                let body = &gen.out[1..gen.out.len() - 1];
                if rng.chance(5) {
                    // Sometimes a string that ends early or late, or smuggles in more.
                    let odd = rng.pick(&["\\", "\"", "a\",\"content\":\"b", "\"}],\"x\":\""]);
                    swapped.push_str(odd);
                }
                swapped.push_str(body);
                from = hole.end;
            }
            swapped.push_str(&previous[from..]);
            compare(&swapped, Some(&previous), &mut tally);
            tally.swapped += 1;
        }
        previous = text;
    }
    eprintln!(
        "generated: {} cases {:?} ({} after a remembered envelope, {} with other strings in a \
         template's holes, {} read through one); the old reader differs on {}: {:#?}",
        tally.cases,
        tally.by_class,
        tally.spliced,
        tally.swapped,
        tally.template_hits,
        tally.old_differs,
        tally.examples
    );
    assert!(tally.spliced > 2_000 && tally.swapped > 2_000 && tally.template_hits > 2_000);
    for class in ["ok", "bad shape", "invalid"] {
        assert!(
            tally.by_class.get(class).copied().unwrap_or(0) > 2_000,
            "{class}"
        );
    }
}

// -- edge cases, spelled out ------------------------------------------------------------------

fn ok(json: &str) -> NChunk {
    match mine(json) {
        Outcome::Ok(chunk) => chunk,
        other => panic!("{json:?}: {other:?}"),
    }
}

fn content(json: &str) -> Vec<Option<String>> {
    ok(json)
        .choices
        .into_iter()
        .map(|(d, _)| d.and_then(|d| d.content))
        .collect()
}

fn usage_of(json: &str) -> Option<Usage4> {
    ok(json).usage
}

const INVALID: Outcome = Outcome::Invalid;
const BAD: Outcome = Outcome::BadShape { has_error: false };

#[test]
fn escaped_keys_are_read_unescaped() {
    let json = r#"{"cho\u0069ces":[{"d\u0065lta":{"cont\u0065nt":"x","\u0072efusal":"r"}}]}"#;
    assert_eq!(content(json), [Some("x".into())]);
    // An escaped "choices" is no ignored member: the remembered envelope stops before it.
    let mut reader = ChunkReader::default();
    assert_eq!(
        read_with(&mut reader, r#"{"id":"a","\u0063hoices":[]}"#).class(),
        "ok"
    );
    assert_eq!(reader.prefix, br#"{"id":"a","#);
}

#[test]
fn repeated_keys_keep_the_last_value() {
    assert_eq!(
        content(r#"{"choices":5,"choices":[{"delta":{"content":"a"}}]}"#),
        [Some("a".into())]
    );
    assert_eq!(mine(r#"{"choices":[],"choices":5}"#), BAD);
    assert_eq!(
        content(r#"{"choices":[{"delta":{"content":1,"content":"a"}}]}"#),
        [Some("a".into())]
    );
    assert_eq!(
        mine(r#"{"choices":[{"delta":{"content":"a","content":1}}]}"#),
        BAD
    );
    assert_eq!(
        content(r#"{"choices":[{"index":1,"index":0,"delta":{"content":"a"}}]}"#),
        [Some("a".into())]
    );
    assert_eq!(
        content(r#"{"choices":[{"index":0,"index":1,"delta":{"content":"a"}}]}"#),
        []
    );
    assert_eq!(
        content(r#"{"choices":[{"delta":{"content":"a"},"delta":null}]}"#),
        [None]
    );
    assert!(!ok(r#"{"error":{"message":"m"},"error":null}"#).has_error);
    assert_eq!(usage_of(r#"{"usage":{"prompt_tokens":5},"usage":7}"#), None);
    assert_eq!(
        usage_of(
            r#"{"usage":{"prompt_tokens_details":{"cached_tokens":3},"prompt_cache_hit_tokens":4,"prompt_tokens_details":1}}"#
        ),
        Some((None, None, Some(4), None))
    );
}

#[test]
fn surrogate_escapes_must_pair() {
    assert_eq!(
        content(r#"{"choices":[{"delta":{"content":"\ud83d\ude00 \uD83D\uDE00"}}]}"#),
        [Some("😀 😀".into())]
    );
    for lone in [
        r"\ud800",
        r"\udc00",
        r"\ud800\u0041",
        r"\ud800\ud800",
        r"\ud800\n",
        r"\ud800x",
    ] {
        // In a field, in a skipped value, in a key: all invalid, as orjson has it.
        assert_eq!(
            mine(&format!(
                r#"{{"choices":[{{"delta":{{"content":"{lone}"}}}}]}}"#
            )),
            INVALID
        );
        assert_eq!(mine(&format!(r#"{{"id":"{lone}","choices":[]}}"#)), INVALID);
        assert_eq!(mine(&format!(r#"{{"{lone}":1}}"#)), INVALID);
        assert_eq!(mine(&format!(r#"{{"x":[{{"y":"{lone}"}}]}}"#)), INVALID);
    }
}

#[test]
fn numbers_overflowing_f64_are_invalid_anywhere() {
    for n in [
        "1e400",
        "-1e400",
        "1e309",
        "100e307",
        "0.00001e314",
        "17976931348623159e292",
        &"9".repeat(310),
    ] {
        assert_eq!(mine(&format!(r#"{{"created":{n}}}"#)), INVALID, "{n}");
        assert_eq!(
            mine(&format!(r#"{{"usage":{{"prompt_tokens":{n}}}}}"#)),
            INVALID,
            "{n}"
        );
        assert_eq!(
            mine(&format!(r#"{{"choices":[{{"index":{n}}}]}}"#)),
            INVALID,
            "{n}"
        );
        assert_eq!(mine(&format!("[{n}]")), INVALID, "{n}");
    }
    for n in [
        "1e308",
        "1.7976931348623157e308",
        "17976931348623158e292",
        "1e-400",
        "0e99999999999999999999",
        "1e-99999999999999999999",
        &"9".repeat(308),
        "-0.0e400",
    ] {
        assert_eq!(
            ok(&format!(r#"{{"created":{n},"choices":[]}}"#)).choices,
            [],
            "{n}"
        );
        assert_eq!(
            usage_of(&format!(r#"{{"usage":{{"prompt_tokens":{n}}}}}"#)),
            Some((None, None, None, None)),
            "{n}"
        );
        assert_eq!(
            mine(&format!(r#"{{"choices":[{{"index":{n}}}]}}"#)),
            BAD,
            "{n}"
        );
    }
}

#[test]
fn integers_are_what_orjson_makes_of_them() {
    // -0 is the integer 0 to orjson (and so to the Python twin); -0.0 is a float.
    assert_eq!(
        content(r#"{"choices":[{"index":-0,"delta":{"content":"a"}}]}"#),
        [Some("a".into())]
    );
    assert_eq!(
        usage_of(r#"{"usage":{"prompt_tokens":-0,"completion_tokens":-0.0}}"#),
        Some((Some(0), None, None, None))
    );
    assert_eq!(mine(r#"{"choices":[{"index":-0.0}]}"#), BAD);
    assert_eq!(mine(r#"{"choices":[{"index":-1}]}"#), BAD);
    assert_eq!(mine(r#"{"choices":[{"index":1.0}]}"#), BAD);
    assert_eq!(mine(r#"{"choices":[{"index":true}]}"#), BAD);
    assert_eq!(mine(r#"{"choices":[{"index":"0"}]}"#), BAD);
    // Up to u64::MAX an index; beyond, a float.
    let calls = |json: &str| ok(json).choices[0].0.clone().unwrap().tool_calls;
    assert_eq!(
        calls(r#"{"choices":[{"delta":{"tool_calls":[{"index":18446744073709551615}]}}]}"#)[0].0,
        Some(u64::MAX)
    );
    assert_eq!(
        mine(r#"{"choices":[{"delta":{"tool_calls":[{"index":18446744073709551616}]}}]}"#),
        BAD
    );
    assert_eq!(
        content(r#"{"choices":[{"index":18446744073709551615,"delta":{"content":"a"}}]}"#),
        []
    );
    assert_eq!(
        usage_of(
            r#"{"usage":{"prompt_tokens":18446744073709551615,"completion_tokens":18446744073709551616,"prompt_cache_hit_tokens":-5}}"#
        ),
        Some((Some(u64::MAX), None, None, None))
    );
    assert_eq!(
        usage_of(r#"{"usage":{"prompt_tokens":1e2,"completion_tokens":"7"}}"#),
        Some((None, None, None, None))
    );
}

#[test]
fn nesting_is_limited_to_orjsons_depth() {
    let nest = |n: usize| "[".repeat(n) + &"]".repeat(n);
    // The top-level object is level 1.
    assert_eq!(ok(&format!(r#"{{"x":{}}}"#, nest(1023))).choices, []);
    assert_eq!(mine(&format!(r#"{{"x":{}}}"#, nest(1024))), INVALID);
    assert_eq!(mine(&nest(1024)), BAD);
    assert_eq!(mine(&nest(1025)), INVALID);
    // Below a delta (level 4).
    let deep = |n: usize| {
        format!(
            r#"{{"choices":[{{"delta":{{"x":{},"content":"a"}}}}]}}"#,
            nest(n)
        )
    };
    assert_eq!(content(&deep(1020)), [Some("a".into())]);
    assert_eq!(mine(&deep(1021)), INVALID);
    // Objects count the same; a wrong type holding deep nesting is still a bad shape.
    let objects = |n: usize| "{\"k\":".repeat(n) + "1" + &"}".repeat(n);
    assert_eq!(ok(&format!(r#"{{"x":{}}}"#, objects(1023))).choices, []);
    assert_eq!(mine(&format!(r#"{{"x":{}}}"#, objects(1024))), INVALID);
    assert_eq!(mine(&format!(r#"{{"choices":{}}}"#, nest(1000))), BAD);
    assert_eq!(
        mine(&format!(r#"{{"error":{},"choices":1}}"#, nest(1000))),
        Outcome::BadShape { has_error: true }
    );
}

#[test]
fn strings_are_strict() {
    let c = |s: &str| {
        mine(&format!(
            r#"{{"choices":[{{"delta":{{"content":"{s}"}}}}]}}"#
        ))
    };
    for bad in [
        "\u{1}", "\t", "\n", "\u{1f}", "\\x", "\\u12", "\\u12g4", "\\", "\\U0041", "\\'",
    ] {
        assert_eq!(c(bad), INVALID, "{bad:?}");
        assert_eq!(mine(&format!(r#"{{"id":"{bad}"}}"#)), INVALID, "{bad:?}");
    }
    assert_eq!(
        content(
            r#"{"choices":[{"delta":{"content":"\u007f\u0000\"\\\/\b\f\n\r\t\u00e9\u00E9é"}}]}"#
        ),
        [Some("\u{7f}\0\"\\/\u{8}\u{c}\n\r\té\u{e9}é".into())]
    );
    assert_eq!(
        content("{\"choices\":[{\"delta\":{\"content\":\"\u{7f}日本\"}}]}"),
        [Some("\u{7f}日本".into())]
    );
    // Long strings: the eight-bytes-at-a-time scan finds a special byte at every offset.
    for i in 0..40 {
        let text = "a".repeat(i);
        assert_eq!(
            content(&format!(
                r#"{{"choices":[{{"delta":{{"content":"{text}\n{text}"}}}}]}}"#
            )),
            [Some(format!("{text}\n{text}"))]
        );
        assert_eq!(
            content(&format!(
                r#"{{"choices":[{{"delta":{{"content":"{text}é{text}"}}}}]}}"#
            )),
            [Some(format!("{text}é{text}"))]
        );
        assert_eq!(c(&format!("{text}\u{1}{text}")), INVALID);
        assert_eq!(c(&text).class(), "ok");
        assert_eq!(
            mine(&format!(r#"{{"choices":[{{"delta":{{"content":"{text}"#)),
            INVALID
        );
    }
}

#[test]
fn strings_borrow_unless_escaped() {
    let json =
        r#"{"choices":[{"delta":{"content":"plain","refusal":"a\nb"},"finish_reason":"stop"}]}"#;
    let chunk = read_chunk(json).unwrap();
    let choice = chunk.choices.first.unwrap();
    let delta = choice.delta.unwrap();
    assert!(matches!(delta.content, Some(Cow::Borrowed("plain"))));
    assert!(matches!(delta.refusal, Some(Cow::Owned(ref s)) if s == "a\nb"));
    assert!(matches!(choice.finish_reason, Some(Cow::Borrowed("stop"))));
    // One choice with one tool call: nothing on the heap.
    let chunk = read_chunk(r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":"{}"}}]}}]}"#).unwrap();
    assert_eq!(chunk.choices.rest.capacity(), 0);
    assert_eq!(
        chunk
            .choices
            .first
            .unwrap()
            .delta
            .unwrap()
            .tool_calls
            .rest
            .capacity(),
        0
    );
}

#[test]
fn whitespace_and_syntax() {
    let spaced = " \t\r\n{ \"choices\" : [ { \"delta\" : { \"content\" : \"a\" , \"tool_calls\" : [ ] } , \"index\" : 0 } ] , \"id\" : [ 1 , { } , [ ] ] } \n\r\t ";
    assert_eq!(content(spaced), [Some("a".into())]);
    for bad in [
        "",
        " ",
        "{",
        "}",
        "{\"a\"}",
        "{\"a\":}",
        "{\"a\":1,}",
        "{,}",
        "{\"a\":1}x",
        "{\"a\":1}{}",
        "{\"a\":[1,]}",
        "{\"a\":[,1]}",
        "{\"a\":[1 2]}",
        "{\"a\" 1}",
        "{'a':1}",
        "{a:1}",
        "{\"a\":nul}",
        "{\"a\":nullx}",
        "{\"a\":tru}",
        "{\"a\":True}",
        "{\"a\":NaN}",
        "{\"a\":Infinity}",
        "{\"a\":01}",
        "{\"a\":-01}",
        "{\"a\":1.}",
        "{\"a\":.5}",
        "{\"a\":+1}",
        "{\"a\":-}",
        "{\"a\":1e}",
        "{\"a\":1e+}",
        "{\"a\":0x1}",
        "{\"a\":1}\u{c}",
        "\u{feff}{}",
        "{\"a\":1}\0",
        "{\"a\"://c\n1}",
        "{\"choices\":[{\"delta\":{\"content\":\"a\"}}],}",
        "{\"choices\":[{\"index\":01}]}",
    ] {
        assert_eq!(mine(bad), INVALID, "{bad:?}");
    }
    for fine in [
        "{}",
        "{\"a\":1E+2}",
        "{\"a\":-0.0e-0}",
        "{\"a\":[[],{},\"\",0,-1,true,false,null]}",
    ] {
        assert_eq!(ok(fine).choices, [], "{fine:?}");
    }
    for not_object in ["null", "[]", "\"s\"", "1", " true "] {
        assert_eq!(mine(not_object), BAD, "{not_object:?}");
    }
    // A shape error does not hide a later syntax error.
    assert_eq!(mine(r#"{"choices":5,"x":[1,]}"#), INVALID);
    assert_eq!(mine(r#"{"choices":[{"delta":7}],"x":"\ud800"}"#), INVALID);
    assert_eq!(mine(r#"{"choices":[null]} x"#), INVALID);
}

#[test]
fn shapes() {
    for bad in [
        r#"{"choices":{}}"#,
        r#"{"choices":[null]}"#,
        r#"{"choices":[1]}"#,
        r#"{"choices":[{},[]]}"#,
        r#"{"choices":[{"delta":[]}]}"#,
        r#"{"choices":[{"delta":"x"}]}"#,
        r#"{"choices":[{"finish_reason":1}]}"#,
        r#"{"choices":[{"delta":{"reasoning":1}}]}"#,
        r#"{"choices":[{"delta":{"reasoning_content":[]}}]}"#,
        r#"{"choices":[{"delta":{"refusal":{}}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":{}}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[null]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"id":1}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"function":"f"}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"function":{"name":1}}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":{}}}]}}]}"#,
        // Choices other than the first are validated too.
        r#"{"choices":[{"index":1,"delta":{"content":1}}]}"#,
    ] {
        assert_eq!(mine(bad), BAD, "{bad}");
    }
    assert_eq!(
        mine(r#"{"error":{"message":"m"},"choices":5}"#),
        Outcome::BadShape { has_error: true }
    );
    assert_eq!(mine(r#"{"error":false,"choices":[{}]}"#).class(), "ok");
    assert!(ok(r#"{"error":false}"#).has_error);
    let chunk = ok(
        r#"{"choices":[{"index":null,"delta":{"content":null,"reasoning_content":"","reasoning":"r","tool_calls":null},"finish_reason":null,"logprobs":{"x":[1]}},{"index":1,"delta":{"content":"other"}},{"delta":null,"finish_reason":"stop"}]}"#,
    );
    assert_eq!(chunk.choices.len(), 2);
    assert_eq!(
        chunk.choices[0].0.as_ref().unwrap().reasoning.as_deref(),
        Some("r")
    );
    assert_eq!(chunk.choices[1], (None, Some("stop".into())));
    let both = ok(r#"{"choices":[{"delta":{"reasoning_content":"a","reasoning":"b"}}]}"#);
    assert_eq!(
        both.choices[0].0.as_ref().unwrap().reasoning.as_deref(),
        Some("a")
    );
    let calls = ok(
        r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"n","arguments":"{"}},{"index":1,"function":null},{}]}}]}"#,
    );
    assert_eq!(
        calls.choices[0].0.as_ref().unwrap().tool_calls,
        [
            (
                Some(0),
                Some("a".into()),
                Some("n".into()),
                Some("{".into())
            ),
            (Some(1), None, None, None),
            (None, None, None, None)
        ]
    );
}

#[test]
fn usage_is_lenient() {
    assert_eq!(usage_of(r#"{"usage":null}"#), None);
    assert_eq!(usage_of(r#"{"usage":[1]}"#), None);
    assert_eq!(usage_of(r#"{"usage":{}}"#), Some((None, None, None, None)));
    assert_eq!(
        usage_of(
            r#"{"usage":{"prompt_tokens":10,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":3},"prompt_cache_hit_tokens":4}}"#
        ),
        Some((Some(10), Some(5), Some(3), None))
    );
    assert_eq!(
        usage_of(r#"{"usage":{"prompt_tokens_details":null,"prompt_cache_hit_tokens":4}}"#),
        Some((None, None, Some(4), None))
    );
    assert_eq!(
        usage_of(
            r#"{"usage":{"prompt_tokens_details":{"cached_tokens":"3"},"prompt_cache_hit_tokens":4}}"#
        ),
        Some((None, None, Some(4), None))
    );
    assert_eq!(
        usage_of(r#"{"usage":{"prompt_tokens_details":[{"cached_tokens":3}]}}"#),
        Some((None, None, None, None))
    );
    // o-series and DeepSeek reasoner: the reasoning part of the completion.
    assert_eq!(
        usage_of(
            r#"{"usage":{"completion_tokens":50,"completion_tokens_details":{"reasoning_tokens":40,"audio_tokens":0}}}"#
        ),
        Some((None, Some(50), None, Some(40)))
    );
    assert_eq!(
        usage_of(
            r#"{"usage":{"completion_tokens_details":{"reasoning_tokens":-1},"completion_tokens_details":null}}"#
        ),
        Some((None, None, None, None))
    );
    // Groq's x_groq.usage when the top-level usage is not an object.
    assert_eq!(
        usage_of(r#"{"x_groq":{"usage":{"prompt_tokens":1}}}"#),
        Some((Some(1), None, None, None))
    );
    assert_eq!(
        usage_of(r#"{"usage":5,"x_groq":{"usage":{"prompt_tokens":1}}}"#),
        Some((Some(1), None, None, None))
    );
    assert_eq!(
        usage_of(r#"{"usage":{"prompt_tokens":2},"x_groq":{"usage":{"prompt_tokens":1}}}"#),
        Some((Some(2), None, None, None))
    );
    assert_eq!(usage_of(r#"{"x_groq":{"usage":7}}"#), None);
    assert_eq!(usage_of(r#"{"x_groq":[{"usage":{}}]}"#), None);
}

#[test]
fn the_envelope_is_remembered_and_resumed() {
    let envelope =
        r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","#;
    let chunk = |rest: &str| format!("{envelope}{rest}");
    let mut reader = ChunkReader::default();
    let first = chunk(r#""choices":[{"delta":{"content":"a"}}]}"#);
    assert_eq!(read_with(&mut reader, &first).class(), "ok");
    assert_eq!(reader.prefix, envelope.as_bytes());
    for (rest, expected) in [
        (
            r#""choices":[{"delta":{"content":"b"}}]}"#,
            Outcome::Ok(NChunk {
                has_error: false,
                usage: None,
                choices: vec![(
                    Some(NDelta {
                        reasoning: None,
                        content: Some("b".into()),
                        refusal: None,
                        tool_calls: vec![],
                    }),
                    None,
                )],
            }),
        ),
        (
            r#""error":{"message":"m"}}"#,
            Outcome::Ok(NChunk {
                has_error: true,
                usage: None,
                choices: vec![],
            }),
        ),
        (
            r#""error":1,"choices":5}"#,
            Outcome::BadShape { has_error: true },
        ),
        ("}", INVALID),
        (" }", INVALID),
        ("", INVALID),
        (
            r#""x":1} "#,
            Outcome::Ok(NChunk {
                has_error: false,
                usage: None,
                choices: vec![],
            }),
        ),
        (
            r#" "usage" : {"prompt_tokens":3}}"#,
            Outcome::Ok(NChunk {
                has_error: false,
                usage: Some((Some(3), None, None, None)),
                choices: vec![],
            }),
        ),
    ] {
        let text = chunk(rest);
        assert_eq!(read_with(&mut reader, &text), expected, "{text}");
        assert_eq!(mine(&text), expected, "{text}");
    }
    // A different envelope is read whole, and remembered instead.
    let other = r#"{"id":"chatcmpl-2","choices":[],"model":"m"}"#;
    assert_eq!(read_with(&mut reader, other).class(), "ok");
    assert_eq!(reader.prefix, br#"{"id":"chatcmpl-2","#);
    // A text that merely starts like the envelope in its first bytes is read whole.
    let mut reader = ChunkReader::default();
    assert_eq!(read_with(&mut reader, &first).class(), "ok");
    let shorter = r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m"}"#;
    assert_eq!(read_with(&mut reader, shorter).class(), "ok");
    // Nothing is remembered from a chunk that was not read.
    let mut reader = ChunkReader::default();
    assert_ne!(
        read_with(&mut reader, r#"{"id":"x","choices":5}"#).class(),
        "ok"
    );
    assert!(reader.prefix.is_empty());
}

/// Each string of each recorded chunk (a hole of the template the chunk makes, if a value)
/// replaced by strings valid or not, some ending early or late, some smuggling in members.
#[test]
fn oracle_on_strings_swapped_in_recorded_chunks() {
    const BODIES: [&str; 26] = [
        "",
        "x",
        " quick",
        "\\n",
        "a\\\"b",
        "\\\\",
        "\\/",
        "\\u00e9",
        "\\ud83d\\ude00",
        "é😀",
        "\u{7f}",
        "\\u0022",
        "a\\",
        "\\",
        "\\ud800",
        "\\udc00",
        "\u{1}",
        "\\x",
        "a\"",
        "a\",\"content\":\"b",
        "a\",\"content\":7,\"x\":\"",
        "a\"},{\"delta\":{\"content\":\"b",
        "a\"}],\"usage\":{\"prompt_tokens\":5},\"x\":\"",
        "a\"}}]}",
        "\"",
        "\\u00e9\\n\\t\"",
    ];
    let mut tally = Tally::default();
    let mut skeletons = std::collections::HashSet::new();
    for stream in recorded() {
        for json in &stream {
            if !skeletons.insert(skeleton(json)) {
                continue;
            }
            for (start, end) in string_bodies(json) {
                for body in BODIES {
                    let swapped = format!("{}{}{}", &json[..start], body, &json[end..]);
                    compare(&swapped, Some(json), &mut tally);
                }
            }
        }
    }
    eprintln!(
        "swapped: {} cases {:?}; {} read through the template",
        tally.cases, tally.by_class, tally.template_hits
    );
    assert!(tally.template_hits > 1_000);
    for (class, least) in [("ok", 5_000), ("bad shape", 10), ("invalid", 5_000)] {
        assert!(
            tally.by_class.get(class).copied().unwrap_or(0) > least,
            "{class}"
        );
    }
}

/// The contents of every string (keys too) of a valid JSON text.
fn string_bodies(json: &str) -> Vec<(usize, usize)> {
    let b = json.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'"' {
            let start = i + 1;
            i = start;
            while b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            out.push((start, i));
        }
        i += 1;
    }
    out
}

/// Reads `next` with a reader that read `first`: whether it went through the template,
/// and what it read (checked against reading it whole).
fn through_template(first: &str, next: &str) -> (bool, Outcome) {
    let mut reader = ChunkReader::default();
    assert_eq!(read_with(&mut reader, first).class(), "ok", "{first}");
    let fits = reader.template.read(next, &mut Chunk::default());
    let got = read_with(&mut reader, next);
    assert_eq!(got, mine(next), "{next}");
    (fits, got)
}

#[test]
fn the_template_takes_other_strings_in_its_holes() {
    let text = |content: &str, obfuscation: &str| {
        format!(
            r#"{{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{{"index":0,"delta":{{"content":"{content}"}},"logprobs":null,"finish_reason":null}}],"usage":null,"obfuscation":"{obfuscation}"}}"#
        )
    };
    let first = text("The", "abc");
    for content in [
        "",
        " quick",
        "a\\nb",
        "\\ud83d\\ude00 é",
        "\\\"",
        "x".repeat(100).as_str(),
    ] {
        let (fits, got) = through_template(&first, &text(content, "zz"));
        assert!(fits, "{content}");
        assert_eq!(got.class(), "ok");
    }
    // Strings that do not end where the hole did, or are invalid, are read whole.
    for content in [
        "a\\",
        "a\",\"content\":\"b",
        "\\ud800",
        "\u{1}",
        "a\"},\"x\":{\"y\":\"",
    ] {
        let (fits, _) = through_template(&first, &text(content, "zz"));
        assert!(!fits, "{content}");
    }
    // The envelope and the structure must be the same bytes.
    let other = first.replace("\"created\":1", "\"created\":2");
    assert!(!through_template(&first, &other).0);
    let other = first.replace("\"index\":0", "\"index\":1");
    assert_eq!(
        through_template(&first, &other),
        (
            false,
            Outcome::Ok(NChunk {
                has_error: false,
                usage: None,
                choices: vec![]
            })
        )
    );
    // A first chunk with escapes makes a template too (its strings are traced by address).
    let escaped = text("a\\n", "\\u0041");
    assert!(through_template(&escaped, &text("b", "c")).0);
}

#[test]
fn the_template_maps_the_strings_the_chunk_kept() {
    // A repeated key: the first string is dropped (and its allocation may be reused by the
    // second); the template must take the second hole for `content`.
    let t = |a: &str, b: &str| {
        format!(r#"{{"choices":[{{"delta":{{"content":"{a}","content":"{b}"}}}}]}}"#)
    };
    for (a, b) in [("x\\n", "y\\n"), ("x", "y"), ("x\\n", "y"), ("x", "y\\n")] {
        let (fits, got) = through_template(&t(a, b), &t("first\\t", "second\\t"));
        assert!(fits);
        assert_eq!(
            got,
            Outcome::Ok(NChunk {
                has_error: false,
                usage: None,
                choices: vec![(
                    Some(NDelta {
                        reasoning: None,
                        content: Some("second\t".into()),
                        refusal: None,
                        tool_calls: vec![]
                    }),
                    None
                )]
            })
        );
    }
    // reasoning_content, or else reasoning: decided on the strings read, not the template's.
    let r = |rc: &str, r: &str| {
        format!(r#"{{"choices":[{{"delta":{{"reasoning_content":"{rc}","reasoning":"{r}"}}}}]}}"#)
    };
    let reasoning = |outcome: Outcome| match outcome {
        Outcome::Ok(chunk) => chunk.choices[0].0.as_ref().unwrap().reasoning.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(
        reasoning(through_template(&r("a", "b"), &r("", "d")).1),
        Some("d".into())
    );
    assert_eq!(
        reasoning(through_template(&r("", "b"), &r("c", "d")).1),
        Some("c".into())
    );
    // Tool calls, several choices (the second dropped), a finish reason, usage.
    let many = |args: &str, other: &str| {
        format!(
            r#"{{"choices":[{{"index":0,"delta":{{"tool_calls":[{{"index":0,"id":"call_1","function":{{"name":"f","arguments":"{args}"}}}},{{"index":1,"function":{{"arguments":"{other}"}}}}]}},"finish_reason":"tool_calls"}},{{"index":1,"delta":{{"content":"{other}"}}}}],"usage":{{"prompt_tokens":3,"prompt_tokens_details":{{"cached_tokens":1}}}}}}"#
        )
    };
    let (fits, got) = through_template(&many("{\\\"a\\\"", "x"), &many("1, 2", "\\u00e9"));
    assert!(fits);
    let Outcome::Ok(chunk) = got else { panic!() };
    assert_eq!(chunk.usage, Some((Some(3), None, Some(1), None)));
    assert_eq!(chunk.choices.len(), 1);
    assert_eq!(chunk.choices[0].1.as_deref(), Some("tool_calls"));
    assert_eq!(
        chunk.choices[0].0.as_ref().unwrap().tool_calls,
        [
            (
                Some(0),
                Some("call_1".into()),
                Some("f".into()),
                Some("1, 2".into())
            ),
            (Some(1), None, None, Some("é".into()))
        ]
    );
}

#[test]
fn templates_are_made_more_rarely_while_none_fits() {
    let mut reader = ChunkReader::default();
    let mut made = 0;
    for i in 0..1000 {
        let text =
            format!(r#"{{"choices":[{{"delta":{{"content":"a"}},"logprobs":{{"x":{i}}}}}]}}"#);
        assert_eq!(read_with(&mut reader, &text).class(), "ok");
        made += usize::from(!reader.template.text.is_empty());
    }
    assert!((10..=30).contains(&made), "{made}");
}
