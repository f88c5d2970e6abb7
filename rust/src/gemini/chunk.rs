//! Reading one Gemini `GenerateContentResponse` chunk, the Gemini decoder's reader (twin of
//! python/hydra_proxy/gemini/chunk.py, which reads what orjson.loads
//! built): one pass of the validating scanner of rust/src/json/scan.rs (as the Chat reader,
//! rust/src/chat/chunk.rs), strings borrowed unless they hold escapes, only `candidates[0]`
//! read, the whole chunk checked before any of it is acted on. A field that is present and
//! not null must have its type (else the chunk is "of an unexpected shape"), judged on its
//! last occurrence; `usageMetadata` and `promptFeedback` are read leniently.

use std::borrow::Cow;

use crate::json::scan::{Result, Scanner, Syntax, MAX_DEPTH};
use crate::json::shaped::{
    count, lenient_object, member, object, objects, opt_bool, opt_str, Bad, Shaped,
};

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

    /// How many arrays and objects are nested here (a scalar: 0).
    pub fn depth(&self) -> usize {
        match self {
            Node::Array(items) => 1 + items.iter().map(Node::depth).max().unwrap_or(0),
            Node::Object(members) => 1 + members.iter().map(|(_, v)| v.depth()).max().unwrap_or(0),
            _ => 0,
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

// -- the reader ----------------------------------------------------------------------------
// One forward pass of the validating scanner (crate::json::scan, what orjson accepts). Every
// value is read or validated even after a wrong type was seen, so invalid JSON is always
// reported as such. `depth` arguments count the containers enclosing a value (the top-level
// object's members: 1). A field is judged on its last occurrence (a repeated key keeps its
// last value, as a Python dict does); a wrong type anywhere the Python twin checks makes the
// chunk "of an unexpected shape".

/// Why a chunk was not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadError {
    /// Not valid JSON (as orjson judges it).
    InvalidJson,
    /// Valid JSON of an unexpected shape; `has_error`: the top level is an object whose
    /// `error` is an object (reported as the upstream's error rather than as a bad shape).
    BadShape { has_error: bool },
}

/// Parse one chunk.
pub fn read_chunk(json: &str) -> std::result::Result<Chunk<'_>, ReadError> {
    let mut s = Scanner::new(json);
    match read_top(&mut s, json) {
        Err(Syntax) => Err(ReadError::InvalidJson),
        Ok((chunk, true)) => Ok(chunk),
        Ok((chunk, false)) => Err(ReadError::BadShape {
            has_error: chunk.has_error,
        }),
    }
}

/// The chunk and whether its shape is right.
fn read_top<'a>(s: &mut Scanner<'a>, json: &'a str) -> Result<(Chunk<'a>, bool)> {
    let mut chunk = Chunk::default();
    if s.ws() != b'{' {
        s.skip_value(0)?;
        s.end()?;
        return Ok((chunk, false));
    }
    s.pos += 1;
    let mut candidate: Shaped<Option<Candidate<'a>>> = Ok(None);
    s.members(|s, key| {
        match key {
            "error" => {
                chunk.has_error = s.ws() == b'{';
                s.skip_value(1)?;
            }
            "usageMetadata" => chunk.usage = usage(s)?,
            "promptFeedback" => chunk.blocked = blocked(s)?,
            "candidates" => candidate = candidates(s, json)?,
            _ => s.skip_value(1)?,
        }
        Ok(())
    })?;
    s.end()?;
    let Ok(candidate) = candidate else {
        return Ok((chunk, false));
    };
    if let Some(candidate) = candidate {
        chunk.finish_reason = candidate.finish_reason;
        chunk.finish_message = candidate.finish_message;
        chunk.parts = candidate.parts;
    }
    Ok((chunk, true))
}

struct Candidate<'a> {
    finish_reason: Option<Cow<'a, str>>,
    finish_message: Option<Cow<'a, str>>,
    parts: Vec<Part<'a>>,
}

/// `usageMetadata`, leniently (not an object: absent; a count that is not a non-negative
/// integer: absent).
fn usage(s: &mut Scanner<'_>) -> Result<Option<UsageMetadata>> {
    lenient_object(s, 2, |s| {
        let mut usage = UsageMetadata::default();
        s.members(|s, key| {
            let slot = match key {
                "promptTokenCount" => &mut usage.prompt,
                "cachedContentTokenCount" => &mut usage.cached,
                "candidatesTokenCount" => &mut usage.candidates,
                "thoughtsTokenCount" => &mut usage.thoughts,
                _ => return s.skip_value(2),
            };
            *slot = count(s, 2)?;
            Ok(())
        })?;
        Ok(usage)
    })
}

/// Whether `promptFeedback.blockReason` is a non-empty string (read leniently).
fn blocked(s: &mut Scanner<'_>) -> Result<bool> {
    let non_empty = |s: &mut Scanner<'_>| {
        if s.ws() == b'"' {
            s.pos += 1;
            Ok(!s.string()?.is_empty())
        } else {
            s.skip_value(2)?;
            Ok(false)
        }
    };
    let found = lenient_object(s, 2, |s| member(s, 2, "blockReason", non_empty))?;
    Ok(found.flatten() == Some(true))
}

/// `candidates`: null or an array whose first element (if any) must be a candidate object;
/// the others are validated, not read (the Python twin never looks at them).
fn candidates<'a>(s: &mut Scanner<'a>, json: &'a str) -> Result<Shaped<Option<Candidate<'a>>>> {
    match s.ws() {
        b'[' => {
            s.pos += 1;
            let mut first = Ok(None);
            let mut index = 0;
            s.elements(|s| {
                index += 1;
                if index > 1 {
                    return s.skip_value(2);
                }
                if s.ws() == b'{' {
                    s.pos += 1;
                    first = candidate(s, json)?.map(Some);
                } else {
                    s.skip_value(2)?;
                    first = Err(Bad);
                }
                Ok(())
            })?;
            Ok(first)
        }
        b'n' => {
            s.null()?;
            Ok(Ok(None))
        }
        _ => {
            s.skip_value(1)?;
            Ok(Err(Bad))
        }
    }
}

/// A candidate's members (the cursor is past its `{`; they are at depth 3).
fn candidate<'a>(s: &mut Scanner<'a>, json: &'a str) -> Result<Shaped<Candidate<'a>>> {
    let mut finish_reason = Ok(None);
    let mut finish_message = Ok(None);
    let mut parts = Ok(None);
    s.members(|s, key| {
        match key {
            "finishReason" => finish_reason = opt_str(s, 3)?,
            "finishMessage" => finish_message = opt_str(s, 3)?,
            "content" => parts = object(s, 3, |s| content(s, json))?.map(Option::flatten),
            _ => s.skip_value(3)?,
        }
        Ok(())
    })?;
    let (Ok(finish_reason), Ok(finish_message), Ok(parts)) = (finish_reason, finish_message, parts)
    else {
        return Ok(Err(Bad));
    };
    Ok(Ok(Candidate {
        finish_reason,
        finish_message,
        parts: parts.unwrap_or_default(),
    }))
}

/// A content object's members (depth 4): its `parts`.
fn content<'a>(s: &mut Scanner<'a>, json: &'a str) -> Result<Shaped<Option<Vec<Part<'a>>>>> {
    let parts = member(s, 4, "parts", |s| objects(s, 4, |s| part(s, json)))?;
    Ok(parts.transpose())
}

/// A part's members (depth 6).
fn part<'a>(s: &mut Scanner<'a>, json: &'a str) -> Result<Shaped<Part<'a>>> {
    const D: u32 = 6;
    let mut thought = Ok(None);
    let mut text = Ok(None);
    let mut signature = Ok(None);
    let mut call = Ok(None);
    let mut code = Ok(None);
    let mut code_result = Ok(None);
    let mut inline_data = Ok(None);
    let mut file_data = Ok(None);
    s.members(|s, key| {
        match key {
            "thought" => thought = opt_bool(s, D)?,
            "text" => text = opt_str(s, D)?,
            "thoughtSignature" => signature = opt_str(s, D)?,
            "functionCall" => call = object(s, D, |s| function_call(s, json, D + 1))?,
            "executableCode" => code = object(s, D, |s| executable_code(s, D + 1))?,
            "codeExecutionResult" => code_result = object(s, D, |s| code_output(s, D + 1))?,
            "inlineData" => inline_data = object(s, D, |s| media(s, D + 1))?,
            "fileData" => file_data = object(s, D, |s| media(s, D + 1))?,
            _ => s.skip_value(D)?,
        }
        Ok(())
    })?;
    let shaped = (|| {
        Ok(Part {
            thought: thought? == Some(true),
            text: text?,
            thought_signature: signature?,
            call: call?,
            code: code?,
            code_result: code_result?,
            inline_data: inline_data?,
            file_data: file_data?,
        })
    })();
    Ok(shaped)
}

fn function_call<'a>(s: &mut Scanner<'a>, json: &'a str, d: u32) -> Result<Shaped<Call<'a>>> {
    let mut name = Ok(None);
    let mut id = Ok(None);
    let mut args = None;
    let mut partial_args = Ok(Vec::new());
    let mut will_continue = Ok(None);
    s.members(|s, key| {
        match key {
            "name" => name = opt_str(s, d)?,
            "id" => id = opt_str(s, d)?,
            "args" => args = Some(node(s, json, d)?).filter(|n| *n != Node::Null),
            "partialArgs" => partial_args = objects(s, d, |s| partial_arg(s, json, d + 2))?,
            "willContinue" => will_continue = opt_bool(s, d)?,
            _ => s.skip_value(d)?,
        }
        Ok(())
    })?;
    let shaped = (|| {
        Ok(Call {
            name: name?,
            id: id?,
            args,
            partial_args: partial_args?,
            will_continue: will_continue? == Some(true),
        })
    })();
    Ok(shaped)
}

fn partial_arg<'a>(s: &mut Scanner<'a>, json: &'a str, d: u32) -> Result<Shaped<PartialArg<'a>>> {
    let mut json_path = Ok(None);
    let mut string = Ok(None);
    let mut number = Ok(None);
    let mut flag = Ok(None);
    let mut will_continue = Ok(None);
    s.members(|s, key| {
        match key {
            "jsonPath" => json_path = opt_str(s, d)?,
            "stringValue" => string = opt_str(s, d)?,
            "numberValue" => {
                number = match node(s, json, d)? {
                    Node::Null => Ok(None),
                    Node::Raw(text) if text != "true" && text != "false" => Ok(Some(text)),
                    _ => Err(Bad),
                }
            }
            "boolValue" => flag = opt_bool(s, d)?,
            "willContinue" => will_continue = opt_bool(s, d)?,
            _ => s.skip_value(d)?,
        }
        Ok(())
    })?;
    let shaped = (|| {
        will_continue?;
        Ok(PartialArg {
            json_path: Some(json_path?.ok_or(Bad)?),
            string: string?,
            number: number?,
            flag: flag?,
        })
    })();
    Ok(shaped)
}

fn executable_code<'a>(s: &mut Scanner<'a>, d: u32) -> Result<Shaped<Code<'a>>> {
    let mut code = Ok(None);
    let mut language = Ok(None);
    s.members(|s, key| {
        match key {
            "code" => code = opt_str(s, d)?,
            "language" => language = opt_str(s, d)?,
            _ => s.skip_value(d)?,
        }
        Ok(())
    })?;
    Ok((|| {
        Ok(Code {
            code: code?,
            language: language?,
        })
    })())
}

fn code_output<'a>(s: &mut Scanner<'a>, d: u32) -> Result<Shaped<CodeResult<'a>>> {
    Ok(member_str(s, d, "output")?.map(|output| CodeResult { output }))
}

fn media<'a>(s: &mut Scanner<'a>, d: u32) -> Result<Shaped<Media<'a>>> {
    Ok(member_str(s, d, "mimeType")?.map(|mime_type| Media { mime_type }))
}

/// The string member `key` of an object whose members (at depth `d`) are otherwise
/// skipped.
fn member_str<'a>(s: &mut Scanner<'a>, d: u32, key: &str) -> Result<Shaped<Option<Cow<'a, str>>>> {
    Ok(member(s, d, key, |s| opt_str(s, d))?.unwrap_or(Ok(None)))
}

// -- values ------------------------------------------------------------------------------------

/// Any value, as orjson would hold it (`depth`: the containers enclosing it).
fn node(s: &mut Scanner<'_>, json: &str, depth: u32) -> Result<Node> {
    match s.ws() {
        b'{' => {
            if depth >= MAX_DEPTH {
                return Err(Syntax);
            }
            s.pos += 1;
            let mut members = Vec::new();
            s.members(|s, key| {
                let value = node(s, json, depth + 1)?;
                Node::set(&mut members, key, value);
                Ok(())
            })?;
            Ok(Node::Object(members))
        }
        b'[' => {
            if depth >= MAX_DEPTH {
                return Err(Syntax);
            }
            s.pos += 1;
            let mut items = Vec::new();
            s.elements(|s| {
                items.push(node(s, json, depth + 1)?);
                Ok(())
            })?;
            Ok(Node::Array(items))
        }
        b'"' => {
            s.pos += 1;
            Ok(Node::Str(s.string()?.into_owned()))
        }
        b'-' | b'0'..=b'9' => {
            let start = s.pos;
            if let Some(n) = s.number()? {
                return Ok(Node::Raw(itoa::Buffer::new().format(n).to_owned()));
            }
            let text = &json[start..s.pos];
            if !text.contains(['.', 'e', 'E']) {
                if let Ok(n) = text.parse::<i64>() {
                    return Ok(Node::Raw(itoa::Buffer::new().format(n).to_owned()));
                }
            }
            // (The scanner rejects numbers that overflow an f64, as orjson does.)
            let value: f64 = text.parse().map_err(|_| Syntax)?;
            Ok(Node::Raw(orjson_float(value)))
        }
        b't' => s.literal(b"true").map(|()| Node::Raw("true".to_owned())),
        b'f' => s.literal(b"false").map(|()| Node::Raw("false".to_owned())),
        _ => s.null().map(|()| Node::Null),
    }
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
            (123_456_789.123, "123456789.123"),
            (2.5e-10, "2.5e-10"),
            (1e-6, "1e-6"),
            (1.5e-6, "1.5e-6"),
            (5e-324, "5e-324"),
            (1.797_693_134_862_315_7e308, "1.7976931348623157e+308"),
            (1.844_674_407_370_955_2e19, "1.8446744073709552e+19"),
        ] {
            assert_eq!(orjson_float(v), s, "{v}");
        }
    }
}
