//! The serde-based chunk reader the scanner replaced, kept for the tests to compare against
//! (verbatim but for this comment).
//!
//! Hand-written visitors instead of derived ones, for three reasons: strings borrow from the
//! input when they hold no escapes (no allocation on the hot path); `null` means absent while
//! any other wrong type is an error (derive would accept an array for a struct); and usage
//! counts are lenient (a count that is not a non-negative integer is ignored). Unknown fields
//! are skipped; a repeated key keeps its last value, as in Python.

use std::borrow::Cow;

use serde::de::{self, MapAccess};

use crate::json::read::{
    skip_value, Fields, LenientCount, NotNull, Obj, Objects, OptIndex, OptStr,
};

/// Only what the decoder reads.
#[derive(Default, Debug)]
pub struct Chunk<'a> {
    /// An `error` key with a non-null value.
    pub has_error: bool,
    pub usage: Option<Usage>,
    /// Deltas and finish reasons of the first choice (index 0 or absent), in order.
    pub choices: Vec<Choice<'a>>,
}

#[derive(Default, Debug)]
pub struct Choice<'a> {
    pub delta: Option<Delta<'a>>,
    pub finish_reason: Option<Cow<'a, str>>,
}

#[derive(Default, Debug)]
pub struct Delta<'a> {
    /// `reasoning_content`, or else `reasoning`.
    pub reasoning: Option<Cow<'a, str>>,
    pub content: Option<Cow<'a, str>>,
    pub refusal: Option<Cow<'a, str>>,
    pub tool_calls: Vec<ToolCallDelta<'a>>,
}

#[derive(Default, Debug)]
pub struct ToolCallDelta<'a> {
    pub index: Option<u64>,
    pub id: Option<Cow<'a, str>>,
    pub name: Option<Cow<'a, str>>,
    pub arguments: Option<Cow<'a, str>>,
}

/// The scanner's usage type: the counts are the same four.
pub use super::Usage;

#[derive(Default)]
struct ChunkFields<'a> {
    has_error: bool,
    usage: Option<Usage>,
    groq_usage: Option<Usage>,
    choices: Vec<ChoiceFields<'a>>,
}

impl<'de> Fields<'de> for ChunkFields<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "error" => self.has_error = map.next_value::<NotNull>()?.0,
            "usage" => self.usage = map.next_value::<Obj<UsageFields>>()?.0.map(|u| u.0),
            "x_groq" => {
                self.groq_usage = map.next_value::<Obj<GroqFields>>()?.0.and_then(|g| g.0);
            }
            "choices" => self.choices = map.next_value::<Objects<ChoiceFields>>()?.0,
            _ => skip_value(map)?,
        }
        Ok(())
    }
}

#[derive(Default)]
struct ChoiceFields<'a> {
    index: Option<u64>,
    delta: Option<Delta<'a>>,
    finish_reason: Option<Cow<'a, str>>,
}

impl<'de> Fields<'de> for ChoiceFields<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "index" => self.index = map.next_value::<OptIndex>()?.0,
            "delta" => {
                self.delta = map
                    .next_value::<Obj<DeltaFields>>()?
                    .0
                    .map(DeltaFields::into_delta);
            }
            "finish_reason" => self.finish_reason = map.next_value::<OptStr>()?.0,
            _ => skip_value(map)?,
        }
        Ok(())
    }
}

#[derive(Default)]
struct DeltaFields<'a> {
    reasoning_content: Option<Cow<'a, str>>,
    reasoning: Option<Cow<'a, str>>,
    content: Option<Cow<'a, str>>,
    refusal: Option<Cow<'a, str>>,
    tool_calls: Vec<ToolCallDelta<'a>>,
}

impl<'a> DeltaFields<'a> {
    fn into_delta(self) -> Delta<'a> {
        // Groq/OpenRouter say `reasoning`; some upstreams send both, duplicated.
        let reasoning = match self.reasoning_content {
            Some(text) if !text.is_empty() => Some(text),
            _ => self.reasoning,
        };
        Delta {
            reasoning,
            content: self.content,
            refusal: self.refusal,
            tool_calls: self.tool_calls,
        }
    }
}

impl<'de> Fields<'de> for DeltaFields<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "reasoning_content" => self.reasoning_content = map.next_value::<OptStr>()?.0,
            "reasoning" => self.reasoning = map.next_value::<OptStr>()?.0,
            "content" => self.content = map.next_value::<OptStr>()?.0,
            "refusal" => self.refusal = map.next_value::<OptStr>()?.0,
            "tool_calls" => self.tool_calls = map.next_value::<Objects<ToolCallDelta>>()?.0,
            _ => skip_value(map)?,
        }
        Ok(())
    }
}

impl<'de> Fields<'de> for ToolCallDelta<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "index" => self.index = map.next_value::<OptIndex>()?.0,
            "id" => self.id = map.next_value::<OptStr>()?.0,
            "function" => {
                let function = map
                    .next_value::<Obj<FunctionFields>>()?
                    .0
                    .unwrap_or_default();
                self.name = function.name;
                self.arguments = function.arguments;
            }
            _ => skip_value(map)?,
        }
        Ok(())
    }
}

#[derive(Default)]
struct FunctionFields<'a> {
    name: Option<Cow<'a, str>>,
    arguments: Option<Cow<'a, str>>,
}

impl<'de> Fields<'de> for FunctionFields<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "name" => self.name = map.next_value::<OptStr>()?.0,
            "arguments" => self.arguments = map.next_value::<OptStr>()?.0,
            _ => skip_value(map)?,
        }
        Ok(())
    }
}

#[derive(Default)]
struct UsageFields(Usage, Option<u64>, Option<u64>);

impl<'de> Fields<'de> for UsageFields {
    const LENIENT: bool = true;
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "prompt_tokens" => self.0.prompt_tokens = map.next_value::<LenientCount>()?.0,
            "completion_tokens" => self.0.completion_tokens = map.next_value::<LenientCount>()?.0,
            "prompt_tokens_details" => {
                self.1 = map.next_value::<Obj<DetailsFields>>()?.0.and_then(|d| d.0);
            }
            "prompt_cache_hit_tokens" => self.2 = map.next_value::<LenientCount>()?.0,
            "completion_tokens_details" => {
                self.0.reasoning_tokens = map
                    .next_value::<Obj<ReasoningFields>>()?
                    .0
                    .and_then(|d| d.0);
            }
            _ => skip_value(map)?,
        }
        // OpenAI's prompt_tokens_details.cached_tokens, else DeepSeek's prompt_cache_hit_tokens.
        self.0.cached_tokens = self.1.or(self.2);
        Ok(())
    }
}

/// Lenient objects read for one member each (the rest ignored), holding what `$read`
/// makes of that member's value.
macro_rules! one_member {
    ($($name:ident($key:literal) -> $out:ty = $read:expr;)*) => {$(
        #[derive(Default)]
        struct $name(Option<$out>);

        impl<'de> Fields<'de> for $name {
            const LENIENT: bool = true;
            fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
                if key == $key {
                    self.0 = ($read)(map.next_value()?);
                } else {
                    skip_value(map)?;
                }
                Ok(())
            }
        }
    )*};
}

one_member! {
    DetailsFields("cached_tokens") -> u64 = |count: LenientCount| count.0;
    ReasoningFields("reasoning_tokens") -> u64 = |count: LenientCount| count.0;
    GroqFields("usage") -> Usage = |usage: Obj<UsageFields>| usage.0.map(|u| u.0);
}

/// Parse one chunk. `Err` carries serde_json's error; its category tells invalid JSON
/// (syntax) from a chunk of an unexpected shape (data).
pub fn read_chunk(json: &str) -> Result<Chunk<'_>, serde_json::Error> {
    let Obj(fields) = serde_json::from_str::<Obj<ChunkFields>>(json)?;
    let Some(fields) = fields else {
        // `null` is not a chunk.
        return Err(de::Error::invalid_type(de::Unexpected::Unit, &"an object"));
    };
    Ok(Chunk {
        has_error: fields.has_error,
        // A top-level usage object wins over Groq's x_groq.usage.
        usage: fields.usage.or(fields.groq_usage),
        choices: fields
            .choices
            .into_iter()
            .filter(|choice| choice.index.unwrap_or(0) == 0)
            .map(|choice| Choice {
                delta: choice.delta,
                finish_reason: choice.finish_reason,
            })
            .collect(),
    })
}
