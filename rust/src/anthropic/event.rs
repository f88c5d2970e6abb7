//! Reading one Anthropic Messages stream event, the Anthropic decoder's reader (twin of
//! `_read_event` in python/hydra_proxy/anthropic/decoder.py): only the fields the decoder
//! uses, the whole event checked before any of it is acted on.
//!
//! The event and its `content_block` / `delta` objects are read in place ([`Fill`]): they
//! are large, and returning them by value through serde's layers copied each one several
//! times per event.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

use crate::json::read::{
    mark_skipped, take_skipped, Fields, Key, LenientCount, LenientStr, NotNull, Obj, OptIndex,
    OptStr, Skipped,
};
use crate::stream::Usage;

#[derive(Default)]
pub struct Event<'a> {
    pub kind: Option<Cow<'a, str>>,
    pub index: Option<u64>,
    pub block: Option<BlockStart<'a>>,
    pub delta: Option<Delta<'a>>,
    top_usage: Option<Usage>,
    message: Option<Message<'a>>,
    pub has_error: bool,
}

impl Event<'_> {
    /// The event's usage: its own, or message_start's.
    pub fn usage(&self) -> Option<Usage> {
        self.top_usage
            .or_else(|| self.message.as_ref().and_then(|m| m.usage))
    }

    /// message_start's message id (read leniently: information only).
    pub fn message_id(&self) -> Option<&str> {
        self.message.as_ref().and_then(|m| m.id.as_deref())
    }

    /// message_start's model (read leniently: information only).
    pub fn message_model(&self) -> Option<&str> {
        self.message.as_ref().and_then(|m| m.model.as_deref())
    }
}

#[derive(Default)]
pub struct BlockStart<'a> {
    pub kind: Option<Cow<'a, str>>,
    pub id: Option<Cow<'a, str>>,
    pub name: Option<Cow<'a, str>>,
    pub text: Option<Cow<'a, str>>,
    pub thinking: Option<Cow<'a, str>>,
    pub data: Option<Cow<'a, str>>,
    pub tool_use_id: Option<Cow<'a, str>>,
    /// A web_search_tool_result's results (any other content reads as none).
    pub content: Vec<SearchResult<'a>>,
}

/// One result of a web_search_tool_result, read for the fields the decoder uses (the large
/// `encrypted_content` is skipped, not copied); a value of another type counts as missing.
#[derive(Default)]
pub struct SearchResult<'a> {
    pub kind: Option<Cow<'a, str>>,
    pub url: Option<Cow<'a, str>>,
    pub title: Option<Cow<'a, str>>,
}

impl<'de> Fields<'de> for SearchResult<'de> {
    const LENIENT: bool = true;
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        let slot = match key {
            "type" => &mut self.kind,
            "url" => &mut self.url,
            "title" => &mut self.title,
            _ => {
                map.next_value::<Skipped>()?;
                return Ok(());
            }
        };
        *slot = map.next_value::<LenientStr>()?.0;
        Ok(())
    }
}

/// A block's `content`: the objects of an array (anything else is none, and elements that
/// are not objects are left out), read leniently: a block's content is information only.
struct Contents<'a>(Vec<SearchResult<'a>>);

impl<'de> Deserialize<'de> for Contents<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Contents<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any value")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut items = Vec::new();
                while let Some(Obj(item)) = seq.next_element::<Obj<SearchResult<'de>>>()? {
                    items.extend(item);
                }
                Ok(Contents(items))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                mark_skipped();
                de::IgnoredAny.visit_map(map)?;
                Ok(Contents(Vec::new()))
            }
            fn visit_borrowed_str<E>(self, _: &'de str) -> Result<Self::Value, E> {
                Ok(Contents(Vec::new()))
            }
            fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
                Ok(Contents(Vec::new()))
            }
            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(Contents(Vec::new()))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(Contents(Vec::new()))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                mark_skipped(); // a float orjson may refuse: the scanner judges the text
                Ok(Contents(Vec::new()))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(Contents(Vec::new()))
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(Contents(Vec::new()))
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Default)]
pub struct Delta<'a> {
    pub kind: Option<Cow<'a, str>>,
    pub text: Option<Cow<'a, str>>,
    pub thinking: Option<Cow<'a, str>>,
    pub signature: Option<Cow<'a, str>>,
    pub partial_json: Option<Cow<'a, str>>,
    pub stop_reason: Option<Cow<'a, str>>,
    /// A citations_delta's citation, as JSON text (any value).
    pub citation: Option<&'a RawValue>,
}

impl<'de> Fields<'de> for Event<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "type" => self.kind = map.next_value::<OptStr>()?.0,
            "index" => self.index = map.next_value::<OptIndex>()?.0,
            "content_block" => map.next_value_seed(Fill(&mut self.block))?,
            "delta" => map.next_value_seed(Fill(&mut self.delta))?,
            "usage" => self.top_usage = map.next_value::<Obj<Usage>>()?.0,
            "message" => map.next_value_seed(Fill(&mut self.message))?,
            "error" => self.has_error = map.next_value::<NotNull>()?.0,
            _ => {
                map.next_value::<Skipped>()?;
            }
        }
        Ok(())
    }
}

impl<'de> Fields<'de> for BlockStart<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        let slot = match key {
            "content" => {
                self.content = map.next_value::<Contents>()?.0;
                return Ok(());
            }
            "type" => &mut self.kind,
            "id" => &mut self.id,
            "tool_use_id" => &mut self.tool_use_id,
            "name" => &mut self.name,
            "text" => &mut self.text,
            "thinking" => &mut self.thinking,
            "data" => &mut self.data,
            _ => {
                map.next_value::<Skipped>()?;
                return Ok(());
            }
        };
        *slot = map.next_value::<OptStr>()?.0;
        Ok(())
    }
}

impl<'de> Fields<'de> for Delta<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        let slot = match key {
            "citation" => {
                mark_skipped(); // a raw value: serde_json checked it only as it skips
                self.citation = map.next_value::<Option<&'de RawValue>>()?;
                return Ok(());
            }
            "type" => &mut self.kind,
            "text" => &mut self.text,
            "thinking" => &mut self.thinking,
            "signature" => &mut self.signature,
            "partial_json" => &mut self.partial_json,
            "stop_reason" => &mut self.stop_reason,
            _ => {
                map.next_value::<Skipped>()?;
                return Ok(());
            }
        };
        *slot = map.next_value::<OptStr>()?.0;
        Ok(())
    }
}

/// An Anthropic usage object holds the canonical counts (Anthropic's are the model's); it
/// never breaks out reasoning tokens.
impl<'de> Fields<'de> for Usage {
    const LENIENT: bool = true;
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        let slot = match key {
            "input_tokens" => &mut self.input_tokens,
            "output_tokens" => &mut self.output_tokens,
            "cache_read_input_tokens" => &mut self.cache_read_input_tokens,
            "cache_creation_input_tokens" => &mut self.cache_creation_input_tokens,
            _ => {
                map.next_value::<Skipped>()?;
                return Ok(());
            }
        };
        *slot = map.next_value::<LenientCount>()?.0;
        Ok(())
    }
}

/// message_start's `message`: its usage, id and model, all read leniently.
#[derive(Default)]
struct Message<'a> {
    usage: Option<Usage>,
    id: Option<Cow<'a, str>>,
    model: Option<Cow<'a, str>>,
}

impl<'de> Fields<'de> for Message<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "usage" => self.usage = map.next_value::<Obj<Usage>>()?.0,
            "id" => self.id = map.next_value::<LenientStr>()?.0,
            "model" => self.model = map.next_value::<LenientStr>()?.0,
            _ => {
                map.next_value::<Skipped>()?;
            }
        }
        Ok(())
    }
}

/// An object of `T` read into `slot` (what `Obj<T>` returns, without moving it): null is
/// None, another type an error; a repeated key starts the object afresh.
struct Fill<'s, T>(&'s mut Option<T>);

impl<'de, T: Fields<'de>> DeserializeSeed<'de> for Fill<'_, T> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<T> Fill<'_, T> {
    fn other<E: de::Error>(self, unexpected: de::Unexpected) -> Result<(), E> {
        Err(E::invalid_type(unexpected, &"an object or null"))
    }
}

impl<'de, T: Fields<'de>> Visitor<'de> for Fill<'_, T> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object or null")
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        *self.0 = None;
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let value = self.0.insert(T::default());
        while let Some(Key(key)) = map.next_key::<Key>()? {
            value.field(&key, &mut map)?;
        }
        Ok(())
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<(), E> {
        self.other(de::Unexpected::Bool(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<(), E> {
        self.other(de::Unexpected::Unsigned(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<(), E> {
        self.other(de::Unexpected::Signed(v))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
        self.other(de::Unexpected::Float(v))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        self.other(de::Unexpected::Str(v))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<(), A::Error> {
        self.other(de::Unexpected::Seq)
    }
}

/// Why an event could not be read.
pub enum ReadError {
    /// Not JSON as orjson (the Python twin's parser) accepts it.
    Syntax,
    /// Valid JSON of an unexpected shape (serde_json's error says where).
    Shape(serde_json::Error),
}

/// Parse one event into `slot`, judged by orjson's rules (the Python twin's parser) in one
/// pass: serde_json checks what it reads as orjson does (strings and their escapes,
/// numbers, literals, what follows the value), so the text is scanned again by the
/// validating scanner only when part of it was skipped unread ([`Skipped`]: serde_json
/// skips lone surrogate escapes, overflowing numbers and any depth) or the read failed
/// (a syntax error anywhere wins over a shape error before it, as with orjson.loads).
#[inline]
pub fn read_event<'s, 'a>(
    json: &'a str,
    slot: &'s mut Option<Event<'a>>,
) -> Result<&'s Event<'a>, ReadError> {
    take_skipped();
    let mut de = serde_json::Deserializer::from_str(json);
    // The typed fields nest 3 deep; what is skipped is checked by the scanner, whose depth
    // limit is orjson's (deeper than serde_json's).
    de.disable_recursion_limit();
    let read = Fill(slot).deserialize(&mut de).and_then(|()| de.end());
    let skipped = take_skipped();
    match read {
        Err(_) if !crate::json::is_valid(json) => return Err(ReadError::Syntax),
        Err(err) => return Err(ReadError::Shape(err)),
        Ok(()) if skipped && !crate::json::is_valid(json) => return Err(ReadError::Syntax),
        Ok(()) => {}
    }
    match slot {
        Some(event) => Ok(event),
        None => Err(ReadError::Shape(de::Error::invalid_type(
            de::Unexpected::Unit,
            &"an object",
        ))),
    }
}
