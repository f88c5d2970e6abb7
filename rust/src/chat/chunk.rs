//! Reading one OpenAI Chat Completions stream chunk, the Chat decoder's reader (twin of
//! python/hydra_proxy/chat/chunk.py, which reads what orjson.loads built).
//!
//! One forward pass of a validating scanner ([`crate::json::scan`]) over the text, reading
//! the fields the decoder needs and validating and skipping the rest. The result is the
//! Python twin's, input for input:
//! - the whole text must be valid JSON as orjson judges it, else [`ReadError::InvalidJson`],
//!   even when a field before the syntax error already had the wrong type;
//! - a field that is present and not null must have the expected type, else
//!   [`ReadError::BadShape`]; usage blocks are lenient (a count that is not a non-negative
//!   integer is ignored, a usage that is not an object is absent);
//! - a repeated key keeps its last value, as a Python dict does, so a wrong type followed
//!   by the same key with a right one is fine: a field's shape is judged on its last value;
//! - keys may hold escapes (`"cont\u0065nt"` is `content`); strings borrow from the input
//!   unless they hold escapes;
//! - every choice is validated, only those with index 0 (or none) are kept.
//!
//! The reader never looks at the contents of a value string: it only stores them (the one
//! rule that depends on them, `reasoning_content` or else `reasoning`, is applied by
//! [`DeltaOf::reasoning`]). [`ChunkReader`] builds on that to skip most of the work for
//! the chunks of a stream, which repeat each other but for a few strings: see there.

use std::borrow::Cow;

pub use cache::ChunkReader;

use crate::json::scan::{Result, Scanner, Syntax};
use crate::json::shaped::{
    count, elements, lenient_object, member, opt_index, opt_str_marked, Bad, Shaped,
};

/// Only what the decoder reads; `S`: how a string is held (a [`Chunk`] holds the text's
/// strings, a template's shape the holes they come from).
#[derive(Default, Debug, PartialEq)]
pub struct ChunkOf<S> {
    /// An `error` key with a non-null value.
    pub has_error: bool,
    pub usage: Option<Usage>,
    /// Deltas and finish reasons of the first choice (index 0 or absent), in order.
    pub choices: List<ChoiceOf<S>>,
}

#[derive(Default, Debug, PartialEq)]
pub struct ChoiceOf<S> {
    pub delta: Option<DeltaOf<S>>,
    pub finish_reason: Option<S>,
}

#[derive(Default, Debug, PartialEq)]
pub struct DeltaOf<S> {
    pub reasoning_content: Option<S>,
    /// `reasoning`, as Groq and OpenRouter name it.
    pub reasoning_fallback: Option<S>,
    pub content: Option<S>,
    pub refusal: Option<S>,
    pub tool_calls: List<ToolCallOf<S>>,
}

#[derive(Default, Debug, PartialEq)]
pub struct ToolCallOf<S> {
    pub index: Option<u64>,
    pub id: Option<S>,
    pub name: Option<S>,
    pub arguments: Option<S>,
}

pub type Chunk<'a> = ChunkOf<Cow<'a, str>>;
pub type Choice<'a> = ChoiceOf<Cow<'a, str>>;
pub type Delta<'a> = DeltaOf<Cow<'a, str>>;
pub type ToolCallDelta<'a> = ToolCallOf<Cow<'a, str>>;

impl<S: AsRef<str>> DeltaOf<S> {
    /// `reasoning_content`, or else `reasoning` (some upstreams send both, duplicated).
    pub fn reasoning(&self) -> Option<&str> {
        match self.reasoning_content.as_ref().map(S::as_ref) {
            Some(text) if !text.is_empty() => Some(text),
            _ => self.reasoning_fallback.as_ref().map(S::as_ref),
        }
    }
}

#[derive(Default, Debug, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
    pub cached_tokens: Option<u64>,
    /// `completion_tokens_details.reasoning_tokens` (o-series, DeepSeek reasoner).
    pub reasoning_tokens: Option<u64>,
}

/// Why a chunk was not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadError {
    /// Not valid JSON (as orjson judges it).
    InvalidJson,
    /// Valid JSON of an unexpected shape; `has_error`: the top level is an object with a
    /// non-null `error` (reported as the upstream's error rather than as a bad shape).
    BadShape { has_error: bool },
}

/// A list holding its first element inline: the usual chunk has one choice with at most
/// one tool call, so reading it allocates nothing.
#[derive(Debug, PartialEq)]
pub struct List<T> {
    first: Option<T>,
    rest: Vec<T>,
}

impl<T> Default for List<T> {
    fn default() -> Self {
        List {
            first: None,
            rest: Vec::new(),
        }
    }
}

impl<T> List<T> {
    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.first.iter().chain(self.rest.iter())
    }

    fn clear(&mut self) {
        self.first = None;
        self.rest.clear();
    }

    /// A new default element at the end, to be filled in place.
    fn push_default(&mut self) -> &mut T
    where
        T: Default,
    {
        if self.first.is_none() {
            self.first.insert(T::default())
        } else {
            self.rest.push(T::default());
            self.rest.last_mut().unwrap()
        }
    }

    fn pop(&mut self) {
        if self.rest.pop().is_none() {
            self.first = None;
        }
    }
}

/// Parse one chunk (without a [`ChunkReader`]'s memory of the previous ones).
#[cfg(test)]
pub fn read_chunk(json: &str) -> std::result::Result<Chunk<'_>, ReadError> {
    let mut chunk = Chunk::default();
    let mut scanner = Scanner::new(json);
    let top = read_top(&mut scanner, false, false, &mut chunk)
        .map_err(|Syntax| ReadError::InvalidJson)?;
    top.check(&chunk)?;
    Ok(chunk)
}

// -- the reader ----------------------------------------------------------------------------
// `depth` arguments count the containers enclosing a value (the top-level object is 1).
// Large values are filled in place (`out` arguments); the functions return whether their
// value had the right type.

/// What reading the top level found besides the chunk's fields.
struct Top {
    /// The top level is an object.
    object: bool,
    /// `choices` (its last occurrence) had the wrong type.
    bad_choices: bool,
    /// Where the prefix of ignored members ends (0: none).
    prefix_end: usize,
}

impl Top {
    fn check(&self, chunk: &Chunk<'_>) -> std::result::Result<(), ReadError> {
        if !self.object {
            return Err(ReadError::BadShape { has_error: false });
        }
        if self.bad_choices {
            return Err(ReadError::BadShape {
                has_error: chunk.has_error,
            });
        }
        Ok(())
    }
}

/// The whole text; with `resume`, the cursor is just past a known prefix (see
/// [`ChunkReader`]); with `mark`, the value strings after the envelope are marked.
fn read_top<'a>(
    s: &mut Scanner<'a>,
    resume: bool,
    mark: bool,
    chunk: &mut Chunk<'a>,
) -> Result<Top> {
    let mut top = Top {
        object: true,
        bad_choices: false,
        prefix_end: 0,
    };
    if !resume && s.ws() != b'{' {
        // Not an object: valid JSON or not?
        s.skip_value(0)?;
        s.end()?;
        top.object = false;
        return Ok(top);
    }
    let mut usage_fields = None;
    let mut groq_usage = None;
    let mut ignored_so_far = true;
    let mut b;
    if resume {
        b = s.ws();
    } else {
        s.pos += 1;
        b = s.ws();
        if b == b'}' {
            s.pos += 1;
            s.end()?;
            return Ok(top);
        }
    }
    loop {
        if b != b'"' {
            return Err(Syntax);
        }
        s.pos += 1;
        let key = s.string()?;
        if s.ws() != b':' {
            return Err(Syntax);
        }
        s.pos += 1;
        if matches!(&*key, "choices" | "usage" | "x_groq" | "error") {
            // Past the envelope: mark value strings from here on (for the template).
            ignored_so_far = false;
            s.record = mark;
        }
        match &*key {
            "choices" => top.bad_choices = read_choices(s, &mut chunk.choices)?.is_err(),
            "usage" => usage_fields = usage(s, 2)?,
            "x_groq" => groq_usage = groq(s)?,
            "error" => chunk.has_error = not_null(s)?,
            _ => {
                s.skip_value(1)?;
                b = s.ws();
                if b == b',' && ignored_so_far {
                    s.pos += 1;
                    top.prefix_end = s.pos;
                    b = s.ws();
                    continue;
                }
            }
        }
        b = s.ws();
        if b == b',' {
            s.pos += 1;
            b = s.ws();
        } else if b == b'}' {
            s.pos += 1;
            s.end()?;
            // A top-level usage object wins over Groq's x_groq.usage.
            chunk.usage = usage_fields.or(groq_usage);
            return Ok(top);
        } else {
            return Err(Syntax);
        }
    }
}

/// An array of choice objects, or null (empty); 1 container encloses it.
fn read_choices<'a>(s: &mut Scanner<'a>, list: &mut List<Choice<'a>>) -> Result<Shaped<()>> {
    list.clear();
    let mut bad = false;
    let shaped = elements(s, 1, |s, object| {
        if !object {
            bad = true;
            return Ok(());
        }
        match read_choice(s, list.push_default())? {
            Ok(true) => {}
            Ok(false) => list.pop(),
            Err(Bad) => {
                list.pop();
                bad = true;
            }
        }
        Ok(())
    })?;
    Ok(if bad { Err(Bad) } else { shaped })
}

/// A choice object's members (the cursor is past its `{`; 3 containers enclose them);
/// whether it is kept: only the first choice (index 0 or none) is translated (n > 1 is
/// refused upstream).
fn read_choice<'a>(s: &mut Scanner<'a>, out: &mut Choice<'a>) -> Result<Shaped<bool>> {
    let mut index = Ok(None);
    let mut delta = Ok(());
    let mut finish_reason = Ok(None);
    s.members(|s, key| {
        match key {
            "index" => index = opt_index(s, 3)?,
            "delta" => delta = read_delta(s, &mut out.delta)?,
            "finish_reason" => finish_reason = opt_str_marked(s, 3)?,
            _ => s.skip_value(3)?,
        }
        Ok(())
    })?;
    let (Ok(index), Ok(()), Ok(finish_reason)) = (index, delta, finish_reason) else {
        return Ok(Err(Bad));
    };
    out.finish_reason = finish_reason;
    Ok(Ok(index.unwrap_or(0) == 0))
}

/// A delta object or null; 3 containers enclose it.
fn read_delta<'a>(s: &mut Scanner<'a>, out: &mut Option<Delta<'a>>) -> Result<Shaped<()>> {
    match s.ws() {
        b'{' => s.pos += 1,
        b'n' => {
            s.null()?;
            *out = None;
            return Ok(Ok(()));
        }
        _ => {
            s.skip_value(3)?;
            *out = None;
            return Ok(Err(Bad));
        }
    }
    let delta = out.insert(Delta::default());
    let mut reasoning_content = Ok(None);
    let mut reasoning = Ok(None);
    let mut content = Ok(None);
    let mut refusal = Ok(None);
    let mut tool_calls = Ok(());
    s.members(|s, key| {
        match key {
            "content" => content = opt_str_marked(s, 4)?,
            "reasoning_content" => reasoning_content = opt_str_marked(s, 4)?,
            "reasoning" => reasoning = opt_str_marked(s, 4)?,
            "refusal" => refusal = opt_str_marked(s, 4)?,
            "tool_calls" => tool_calls = read_tool_calls(s, &mut delta.tool_calls)?,
            _ => s.skip_value(4)?,
        }
        Ok(())
    })?;
    let (Ok(reasoning_content), Ok(reasoning), Ok(content), Ok(refusal), Ok(())) =
        (reasoning_content, reasoning, content, refusal, tool_calls)
    else {
        return Ok(Err(Bad));
    };
    delta.reasoning_content = reasoning_content;
    delta.reasoning_fallback = reasoning;
    delta.content = content;
    delta.refusal = refusal;
    Ok(Ok(()))
}

/// An array of tool call objects, or null (empty); 4 containers enclose it.
fn read_tool_calls<'a>(
    s: &mut Scanner<'a>,
    list: &mut List<ToolCallDelta<'a>>,
) -> Result<Shaped<()>> {
    list.clear();
    let mut bad = false;
    let shaped = elements(s, 4, |s, object| {
        if !object {
            bad = true;
        } else if read_tool_call(s, list.push_default())?.is_err() {
            list.pop();
            bad = true;
        }
        Ok(())
    })?;
    Ok(if bad { Err(Bad) } else { shaped })
}

/// A tool call object's members (the cursor is past its `{`; 6 containers enclose them).
fn read_tool_call<'a>(s: &mut Scanner<'a>, out: &mut ToolCallDelta<'a>) -> Result<Shaped<()>> {
    let mut index = Ok(None);
    let mut id = Ok(None);
    let mut function = Ok(None);
    s.members(|s, key| {
        match key {
            "index" => index = opt_index(s, 6)?,
            "id" => id = opt_str_marked(s, 6)?,
            "function" => function = read_function(s)?,
            _ => s.skip_value(6)?,
        }
        Ok(())
    })?;
    let (Ok(index), Ok(id), Ok(function)) = (index, id, function) else {
        return Ok(Err(Bad));
    };
    let (name, arguments) = function.unwrap_or_default();
    *out = ToolCallDelta {
        index,
        id,
        name,
        arguments,
    };
    Ok(Ok(()))
}

type Function<'a> = (Option<Cow<'a, str>>, Option<Cow<'a, str>>);

/// A function object (name, arguments) or null; 6 containers enclose it.
fn read_function<'a>(s: &mut Scanner<'a>) -> Result<Shaped<Option<Function<'a>>>> {
    match s.ws() {
        b'{' => s.pos += 1,
        b'n' => {
            s.null()?;
            return Ok(Ok(None));
        }
        _ => {
            s.skip_value(6)?;
            return Ok(Err(Bad));
        }
    }
    let mut name = Ok(None);
    let mut arguments = Ok(None);
    s.members(|s, key| {
        match key {
            "name" => name = opt_str_marked(s, 7)?,
            "arguments" => arguments = opt_str_marked(s, 7)?,
            _ => s.skip_value(7)?,
        }
        Ok(())
    })?;
    let (Ok(name), Ok(arguments)) = (name, arguments) else {
        return Ok(Err(Bad));
    };
    Ok(Ok(Some((name, arguments))))
}

/// A usage object, leniently: anything else is absent. `depth`: the object's own depth.
fn usage(s: &mut Scanner<'_>, depth: u32) -> Result<Option<Usage>> {
    lenient_object(s, depth, |s| {
        let mut usage = Usage::default();
        let mut details = None;
        let mut cache_hit = None;
        s.members(|s, key| {
            match key {
                "prompt_tokens" => usage.prompt_tokens = count(s, depth)?,
                "completion_tokens" => usage.completion_tokens = count(s, depth)?,
                "prompt_tokens_details" => details = detail(s, depth + 1, "cached_tokens")?,
                "completion_tokens_details" => {
                    usage.reasoning_tokens = detail(s, depth + 1, "reasoning_tokens")?;
                }
                "prompt_cache_hit_tokens" => cache_hit = count(s, depth)?,
                _ => s.skip_value(depth)?,
            }
            Ok(())
        })?;
        // OpenAI's prompt_tokens_details.cached_tokens, else DeepSeek's
        // prompt_cache_hit_tokens.
        usage.cached_tokens = details.or(cache_hit);
        Ok(usage)
    })
}

/// The count `name` of a usage details object (`prompt_tokens_details.cached_tokens`,
/// `completion_tokens_details.reasoning_tokens`), leniently. `depth`: the object's.
fn detail(s: &mut Scanner<'_>, depth: u32, name: &str) -> Result<Option<u64>> {
    let found = lenient_object(s, depth, |s| member(s, depth, name, |s| count(s, depth)))?;
    Ok(found.flatten().flatten())
}

/// Groq's `x_groq.usage`, leniently; 1 container encloses x_groq.
fn groq(s: &mut Scanner<'_>) -> Result<Option<Usage>> {
    let found = lenient_object(s, 2, |s| member(s, 2, "usage", |s| usage(s, 3)))?;
    Ok(found.flatten().flatten())
}

// -- values ----------------------------------------------------------------------------------

/// Whether a value is there and not null.
#[inline]
fn not_null(s: &mut Scanner<'_>) -> Result<bool> {
    if s.ws() == b'n' {
        s.null()?;
        Ok(false)
    } else {
        s.skip_value(1)?;
        Ok(true)
    }
}

mod cache;
#[cfg(test)]
mod reference;
#[cfg(test)]
mod tests;
