//! Reading one OpenAI Chat Completions stream chunk (twin of `_read_chunk` in
//! python/hydra_proxy/messages_via_chat/stream.py).
//!
//! Hand-written visitors instead of derived ones, for three reasons: strings borrow from the
//! input when they hold no escapes (no allocation on the hot path); `null` means absent while
//! any other wrong type is an error (derive would accept an array for a struct); and usage
//! counts are lenient (a count that is not a non-negative integer is ignored). Unknown fields
//! are skipped; a repeated key keeps its last value, as in Python.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// Only what the transducer reads.
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

#[derive(Default, Debug, Clone, Copy)]
pub struct Usage {
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
    pub cached_tokens: Option<u64>,
}

// -- leaf values -------------------------------------------------------------------------

/// A string or null; any other type is an error.
struct OptStr<'a>(Option<Cow<'a, str>>);

impl<'de> Deserialize<'de> for OptStr<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = OptStr<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string or null")
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(OptStr(None))
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(OptStr(Some(Cow::Borrowed(v))))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(OptStr(Some(Cow::Owned(v.to_owned()))))
            }
            fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
                Ok(OptStr(Some(Cow::Owned(v))))
            }
        }
        d.deserialize_any(V)
    }
}

/// An object key, borrowed from the input unless it holds escapes (serde's own
/// `Cow<str>` always allocates).
struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object key")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
        }
        d.deserialize_str(V)
    }
}

/// A non-negative integer or null; any other type is an error.
struct OptIndex(Option<u64>);

impl<'de> Deserialize<'de> for OptIndex {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = OptIndex;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a non-negative integer or null")
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(OptIndex(None))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
                Ok(OptIndex(Some(v)))
            }
        }
        d.deserialize_any(V)
    }
}

/// A non-negative integer, or None for anything else (which is consumed and ignored).
struct LenientCount(Option<u64>);

impl<'de> Deserialize<'de> for LenientCount {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = LenientCount;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any value")
            }
            fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
                Ok(LenientCount(Some(v)))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(LenientCount(None))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(LenientCount(None))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(LenientCount(None))
            }
            fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
                Ok(LenientCount(None))
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(LenientCount(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                IgnoredAny.visit_seq(seq)?;
                Ok(LenientCount(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                IgnoredAny.visit_map(map)?;
                Ok(LenientCount(None))
            }
        }
        d.deserialize_any(V)
    }
}

/// Whether a value is present and not null.
struct NotNull(bool);

impl<'de> Deserialize<'de> for NotNull {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = NotNull;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any value")
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(NotNull(false))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(NotNull(true))
            }
            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(NotNull(true))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(NotNull(true))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(NotNull(true))
            }
            fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
                Ok(NotNull(true))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                IgnoredAny.visit_seq(seq)?;
                Ok(NotNull(true))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                IgnoredAny.visit_map(map)?;
                Ok(NotNull(true))
            }
        }
        d.deserialize_any(V)
    }
}

// -- objects -----------------------------------------------------------------------------

/// An object read key by key. `LENIENT`: a value of another type is absent rather than an
/// error (usage blocks); null is always absent.
trait Fields<'de>: Default {
    const LENIENT: bool = false;
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error>;
}

/// An object of `T`, or null (None); other types are an error unless `T::LENIENT`.
struct Obj<T>(Option<T>);

impl<'de, T: Fields<'de>> Deserialize<'de> for Obj<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<T> V<T> {
            fn other<'de, E: de::Error>(self, unexpected: de::Unexpected) -> Result<Obj<T>, E>
            where
                T: Fields<'de>,
            {
                if T::LENIENT {
                    Ok(Obj(None))
                } else {
                    Err(E::invalid_type(unexpected, &"an object or null"))
                }
            }
        }
        impl<'de, T: Fields<'de>> Visitor<'de> for V<T> {
            type Value = Obj<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object or null")
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(Obj(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut value = T::default();
                while let Some(Key(key)) = map.next_key::<Key>()? {
                    value.field(&key, &mut map)?;
                }
                Ok(Obj(Some(value)))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
                self.other(de::Unexpected::Bool(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                self.other(de::Unexpected::Unsigned(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                self.other(de::Unexpected::Signed(v))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
                self.other(de::Unexpected::Float(v))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                self.other(de::Unexpected::Str(v))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                if T::LENIENT {
                    IgnoredAny.visit_seq(seq)?;
                }
                self.other(de::Unexpected::Seq)
            }
        }
        d.deserialize_any(V(PhantomData))
    }
}

/// An array of objects of `T`, or null (empty); null elements and other types are errors.
struct Objects<T>(Vec<T>);

impl<'de, T: Fields<'de>> Deserialize<'de> for Objects<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Fields<'de>> Visitor<'de> for V<T> {
            type Value = Objects<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an array of objects or null")
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(Objects(Vec::new()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut items = Vec::new();
                while let Some(Obj(item)) = seq.next_element::<Obj<T>>()? {
                    match item {
                        Some(item) => items.push(item),
                        None => {
                            return Err(de::Error::invalid_type(de::Unexpected::Unit, &self));
                        }
                    }
                }
                Ok(Objects(items))
            }
        }
        d.deserialize_any(V(PhantomData))
    }
}

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
            _ => {
                map.next_value::<IgnoredAny>()?;
            }
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
                    .map(DeltaFields::into_delta)
            }
            "finish_reason" => self.finish_reason = map.next_value::<OptStr>()?.0,
            _ => {
                map.next_value::<IgnoredAny>()?;
            }
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
            _ => {
                map.next_value::<IgnoredAny>()?;
            }
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
            _ => {
                map.next_value::<IgnoredAny>()?;
            }
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
            _ => {
                map.next_value::<IgnoredAny>()?;
            }
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
            _ => {
                map.next_value::<IgnoredAny>()?;
            }
        }
        // OpenAI's prompt_tokens_details.cached_tokens, else DeepSeek's prompt_cache_hit_tokens.
        self.0.cached_tokens = self.1.or(self.2);
        Ok(())
    }
}

#[derive(Default)]
struct DetailsFields(Option<u64>);

impl<'de> Fields<'de> for DetailsFields {
    const LENIENT: bool = true;
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        if key == "cached_tokens" {
            self.0 = map.next_value::<LenientCount>()?.0;
        } else {
            map.next_value::<IgnoredAny>()?;
        }
        Ok(())
    }
}

#[derive(Default)]
struct GroqFields(Option<Usage>);

impl<'de> Fields<'de> for GroqFields {
    const LENIENT: bool = true;
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        if key == "usage" {
            self.0 = map.next_value::<Obj<UsageFields>>()?.0.map(|u| u.0);
        } else {
            map.next_value::<IgnoredAny>()?;
        }
        Ok(())
    }
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
