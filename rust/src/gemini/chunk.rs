//! Reading one Gemini `GenerateContentResponse` chunk, the Gemini decoder's reader (twin of
//! `_read_chunk` in python/hydra_proxy/gemini/decoder.py, which reads what orjson.loads
//! built): typed serde visitors over the text, strings borrowed unless they hold escapes,
//! only `candidates[0]` read, the whole chunk checked before any of it is acted on. A
//! field that is present and not null must have its type (else the chunk is "of an
//! unexpected shape"); `usageMetadata` and `promptFeedback` are read leniently.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

use crate::json::read::{Fields, Key, LenientCount, LenientStr, Obj, Objects, OptStr};

#[derive(Default)]
pub struct Chunk<'a> {
    /// An `error` member that is an object.
    pub has_error: bool,
    pub usage: Option<UsageMetadata>,
    /// `promptFeedback.blockReason` is a non-empty string.
    pub blocked: bool,
    pub finish_reason: Option<Cow<'a, str>>,
    pub finish_message: Option<Cow<'a, str>>,
    pub parts: Vec<Part<'a>>,
}

#[derive(Default, Clone, Copy)]
pub struct UsageMetadata {
    pub prompt: Option<u64>,
    pub cached: Option<u64>,
    pub candidates: Option<u64>,
    pub thoughts: Option<u64>,
}

#[derive(Default)]
pub struct Part<'a> {
    pub thought: bool,
    pub text: Option<Cow<'a, str>>,
    pub thought_signature: Option<Cow<'a, str>>,
    pub call: Option<Call<'a>>,
    code: Option<Code<'a>>,
    code_result: Option<CodeResult<'a>>,
    inline_data: Option<Media<'a>>,
    file_data: Option<Media<'a>>,
}

#[derive(Default)]
pub struct Call<'a> {
    pub name: Option<Cow<'a, str>>,
    pub id: Option<Cow<'a, str>>,
    pub args: Option<Node>,
    pub partial_args: Vec<PartialArg<'a>>,
    pub will_continue: bool,
}

#[derive(Default)]
pub struct PartialArg<'a> {
    pub json_path: Option<Cow<'a, str>>,
    string: Option<Cow<'a, str>>,
    number: Option<String>,
    flag: Option<bool>,
}

impl PartialArg<'_> {
    /// The piece's value: a string, else a number, else a bool, else null (as Python).
    pub fn value(&self) -> Node {
        if let Some(s) = &self.string {
            Node::Str(s.to_string())
        } else if let Some(n) = &self.number {
            Node::Raw(n.clone())
        } else if let Some(b) = self.flag {
            Node::Raw(if b { "true" } else { "false" }.to_owned())
        } else {
            Node::Null
        }
    }
}

#[derive(Default)]
struct Code<'a> {
    code: Option<Cow<'a, str>>,
    language: Option<Cow<'a, str>>,
}

#[derive(Default)]
struct CodeResult<'a> {
    output: Option<Cow<'a, str>>,
}

#[derive(Default)]
struct Media<'a> {
    mime_type: Option<Cow<'a, str>>,
}

impl Part<'_> {
    /// The text of a code, code-result or media part (as hydra_proxy.gemini.response).
    pub fn other_text(&self) -> Option<String> {
        if let Some(Code {
            code: Some(source),
            language,
        }) = &self.code
        {
            let fence = match language.as_deref() {
                Some(l) if !l.is_empty() && l != "LANGUAGE_UNSPECIFIED" => l.to_lowercase(),
                _ => String::new(),
            };
            return Some(format!("```{fence}\n{source}\n```"));
        }
        if let Some(CodeResult {
            output: Some(output),
        }) = &self.code_result
        {
            return Some(output.to_string());
        }
        let media = self.inline_data.as_ref().or(self.file_data.as_ref())?;
        let kind = media.mime_type.as_deref().filter(|m| !m.is_empty());
        Some(format!(
            "[Gemini returned {} output, which is not shown here.]",
            kind.unwrap_or("media")
        ))
    }
}

// -- objects -----------------------------------------------------------------------------

#[derive(Default)]
struct ChunkFields<'a> {
    chunk: Chunk<'a>,
    candidate: Option<Candidate<'a>>,
}

#[derive(Default)]
struct Candidate<'a> {
    finish_reason: Option<Cow<'a, str>>,
    finish_message: Option<Cow<'a, str>>,
    content: Option<Content<'a>>,
}

#[derive(Default)]
struct Content<'a> {
    parts: Vec<Part<'a>>,
}

#[derive(Default)]
struct Feedback {
    blocked: bool,
}

impl<'de> Fields<'de> for ChunkFields<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "error" => {
                let raw = map.next_value::<&RawValue>()?;
                self.chunk.has_error = raw.get().starts_with('{');
            }
            "usageMetadata" => self.chunk.usage = map.next_value::<Obj<UsageMetadata>>()?.0,
            "promptFeedback" => {
                self.chunk.blocked = map
                    .next_value::<Obj<Feedback>>()?
                    .0
                    .is_some_and(|f| f.blocked);
            }
            "candidates" => self.candidate = map.next_value::<FirstCandidate>()?.0,
            _ => {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

impl<'de> Fields<'de> for UsageMetadata {
    const LENIENT: bool = true;
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        let slot = match key {
            "promptTokenCount" => &mut self.prompt,
            "cachedContentTokenCount" => &mut self.cached,
            "candidatesTokenCount" => &mut self.candidates,
            "thoughtsTokenCount" => &mut self.thoughts,
            _ => {
                map.next_value::<IgnoredAny>()?;
                return Ok(());
            }
        };
        *slot = map.next_value::<LenientCount>()?.0;
        Ok(())
    }
}

impl<'de> Fields<'de> for Feedback {
    const LENIENT: bool = true;
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        if key == "blockReason" {
            let reason = map.next_value::<LenientStr>()?.0;
            self.blocked = reason.is_some_and(|r| !r.is_empty());
        } else {
            map.next_value::<IgnoredAny>()?;
        }
        Ok(())
    }
}

/// `candidates`: null or an array whose first element (if any) is a candidate object;
/// the other elements are skipped unread, as the Python twin never looks at them.
struct FirstCandidate<'a>(Option<Candidate<'a>>);

impl<'de> Deserialize<'de> for FirstCandidate<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = FirstCandidate<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an array of candidates or null")
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(FirstCandidate(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let first = match seq.next_element::<Obj<Candidate>>()? {
                    None => None,
                    Some(Obj(None)) => {
                        return Err(de::Error::invalid_type(de::Unexpected::Unit, &self))
                    }
                    Some(Obj(Some(candidate))) => Some(candidate),
                };
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(FirstCandidate(first))
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> Fields<'de> for Candidate<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "finishReason" => self.finish_reason = map.next_value::<OptStr>()?.0,
            "finishMessage" => self.finish_message = map.next_value::<OptStr>()?.0,
            "content" => self.content = map.next_value::<Obj<Content>>()?.0,
            _ => {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

impl<'de> Fields<'de> for Content<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        if key == "parts" {
            self.parts = map.next_value::<Objects<Part>>()?.0;
        } else {
            map.next_value::<IgnoredAny>()?;
        }
        Ok(())
    }
}

impl<'de> Fields<'de> for Part<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "thought" => self.thought = map.next_value::<Option<bool>>()? == Some(true),
            "text" => self.text = map.next_value::<OptStr>()?.0,
            "thoughtSignature" => self.thought_signature = map.next_value::<OptStr>()?.0,
            "functionCall" => self.call = map.next_value::<Obj<Call>>()?.0,
            "executableCode" => self.code = map.next_value::<Obj<Code>>()?.0,
            "codeExecutionResult" => self.code_result = map.next_value::<Obj<CodeResult>>()?.0,
            "inlineData" => self.inline_data = map.next_value::<Obj<Media>>()?.0,
            "fileData" => self.file_data = map.next_value::<Obj<Media>>()?.0,
            _ => {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

impl<'de> Fields<'de> for Call<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "name" => self.name = map.next_value::<OptStr>()?.0,
            "id" => self.id = map.next_value::<OptStr>()?.0,
            "args" => self.args = map.next_value::<Node>().map(Node::not_null)?,
            "partialArgs" => self.partial_args = map.next_value::<Objects<PartialArg>>()?.0,
            "willContinue" => self.will_continue = map.next_value::<Option<bool>>()? == Some(true),
            _ => {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

impl<'de> Fields<'de> for PartialArg<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "jsonPath" => self.json_path = map.next_value::<OptStr>()?.0,
            "stringValue" => self.string = map.next_value::<OptStr>()?.0,
            "numberValue" => self.number = map.next_value::<OptNumber>()?.0,
            "boolValue" => self.flag = map.next_value::<Option<bool>>()?,
            "willContinue" => {
                map.next_value::<Option<bool>>()?;
            }
            _ => {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

impl<'de> Fields<'de> for Code<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "code" => self.code = map.next_value::<OptStr>()?.0,
            "language" => self.language = map.next_value::<OptStr>()?.0,
            _ => {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

impl<'de> Fields<'de> for CodeResult<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        if key == "output" {
            self.output = map.next_value::<OptStr>()?.0;
        } else {
            map.next_value::<IgnoredAny>()?;
        }
        Ok(())
    }
}

impl<'de> Fields<'de> for Media<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        if key == "mimeType" {
            self.mime_type = map.next_value::<OptStr>()?.0;
        } else {
            map.next_value::<IgnoredAny>()?;
        }
        Ok(())
    }
}

// -- JSON values: function-call arguments -------------------------------------------------

/// A JSON value as Python's orjson holds it: objects keep their keys in first-seen order
/// with the last value of a repeated key (a dict), numbers are kept as orjson writes them
/// back. `write` gives orjson.dumps's bytes.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    Null,
    /// A number, `true` or `false`, as its JSON text.
    Raw(String),
    Str(String),
    Array(Vec<Node>),
    Object(Vec<(String, Node)>),
}

impl Node {
    fn not_null(self) -> Option<Node> {
        (self != Node::Null).then_some(self)
    }

    pub fn write(&self, out: &mut Vec<u8>) {
        match self {
            Node::Null => out.extend_from_slice(b"null"),
            Node::Raw(text) => out.extend_from_slice(text.as_bytes()),
            Node::Str(text) => crate::json::write::write_str(out, text),
            Node::Array(items) => {
                out.push(b'[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    item.write(out);
                }
                out.push(b']');
            }
            Node::Object(members) => {
                out.push(b'{');
                for (i, (key, value)) in members.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    crate::json::write::write_str(out, key);
                    out.push(b':');
                    value.write(out);
                }
                out.push(b'}');
            }
        }
    }

    /// Set `key` of an object: a repeated key keeps its place and takes the new value.
    pub fn set(members: &mut Vec<(String, Node)>, key: &str, value: Node) {
        match members.iter_mut().find(|(k, _)| k == key) {
            Some(member) => member.1 = value,
            None => members.push((key.to_owned(), value)),
        }
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Node;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_unit<E>(self) -> Result<Node, E> {
                Ok(Node::Null)
            }
            fn visit_bool<E>(self, v: bool) -> Result<Node, E> {
                Ok(Node::Raw(if v { "true" } else { "false" }.to_owned()))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Node, E> {
                Ok(Node::Raw(itoa::Buffer::new().format(v).to_owned()))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Node, E> {
                Ok(Node::Raw(itoa::Buffer::new().format(v).to_owned()))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Node, E> {
                Ok(Node::Raw(orjson_float(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Node, E> {
                Ok(Node::Str(v.to_owned()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element::<Node>()? {
                    items.push(item);
                }
                Ok(Node::Array(items))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
                let mut members = Vec::new();
                while let Some(Key(key)) = map.next_key::<Key>()? {
                    let value = map.next_value::<Node>()?;
                    Node::set(&mut members, &key, value);
                }
                Ok(Node::Object(members))
            }
        }
        d.deserialize_any(V)
    }
}

/// A number (its JSON text as orjson writes it back) or null; other types are an error.
struct OptNumber(Option<String>);

impl<'de> Deserialize<'de> for OptNumber {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Node::deserialize(d)? {
            Node::Null => Ok(OptNumber(None)),
            Node::Raw(text) if text != "true" && text != "false" => Ok(OptNumber(Some(text))),
            _ => Err(de::Error::invalid_type(
                de::Unexpected::Other("not a number"),
                &"a number or null",
            )),
        }
    }
}

/// An f64 as orjson writes it: the shortest digits that read back the same, in plain
/// notation for decimal exponents -5 to 15 (`0.00001`, `1e15` as `1000000000000000.0`),
/// else `d.ddde+XX` / `d.ddde-X`.
pub fn orjson_float(v: f64) -> String {
    let sci = format!("{v:e}"); // shortest round-trip digits: "-1.234e-5"
    let (mantissa, exponent) = sci.split_once('e').expect("LowerExp has an exponent");
    let exponent: i32 = exponent.parse().expect("LowerExp exponent is an integer");
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let mut out = String::from(sign);
    if (-5..=15).contains(&exponent) {
        if exponent >= 0 {
            let point = exponent as usize + 1;
            if digits.len() <= point {
                out.push_str(&digits);
                out.extend(std::iter::repeat('0').take(point - digits.len()));
                out.push_str(".0");
            } else {
                out.push_str(&digits[..point]);
                out.push('.');
                out.push_str(&digits[point..]);
            }
        } else {
            out.push_str("0.");
            out.extend(std::iter::repeat('0').take((-exponent - 1) as usize));
            out.push_str(&digits);
        }
    } else {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        if exponent >= 0 {
            out.push('+');
        }
        out.push_str(&exponent.to_string());
    }
    out
}

/// Parse one chunk; `Err` carries serde_json's error (syntax vs unexpected shape).
pub fn read_chunk(json: &str) -> Result<Chunk<'_>, serde_json::Error> {
    let Obj(fields) = serde_json::from_str::<Obj<ChunkFields>>(json)?;
    let Some(fields) = fields else {
        return Err(de::Error::invalid_type(de::Unexpected::Unit, &"an object"));
    };
    let mut chunk = fields.chunk;
    if let Some(candidate) = fields.candidate {
        chunk.finish_reason = candidate.finish_reason;
        chunk.finish_message = candidate.finish_message;
        chunk.parts = candidate.content.map(|c| c.parts).unwrap_or_default();
    }
    Ok(chunk)
}

#[cfg(test)]
mod tests {
    use super::orjson_float;

    #[test]
    fn floats_as_orjson_writes_them() {
        // Values printed by orjson.dumps (python -c "import orjson; orjson.dumps(x)").
        for (v, s) in [
            (0.5, "0.5"),
            (1e20, "1e+20"),
            (1e-7, "1e-7"),
            (100.0, "100.0"),
            (-0.0, "-0.0"),
            (0.0, "0.0"),
            (1e15, "1000000000000000.0"),
            (1e16, "1e+16"),
            (1.5e16, "1.5e+16"),
            (9.999e15, "9999000000000000.0"),
            (0.0001, "0.0001"),
            (0.00001, "0.00001"),
            (1.234e-5, "0.00001234"),
            (123456789.123, "123456789.123"),
            (2.5e-10, "2.5e-10"),
            (1e-6, "1e-6"),
            (1.5e-6, "1.5e-6"),
            (5e-324, "5e-324"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (1.8446744073709552e19, "1.8446744073709552e+19"),
        ] {
            assert_eq!(orjson_float(v), s, "{v}");
        }
    }
}
