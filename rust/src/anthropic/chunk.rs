//! Reading one Anthropic Messages stream event, the Anthropic decoder's reader (twin of
//! python/hydra_proxy/anthropic/chunk.py): only the fields the decoder
//! uses, the whole event checked before any of it is acted on.
//!
//! The event and its `content_block` / `delta` objects are read in place ([`Fill`]): they
//! are large, and returning them by value through serde's layers copied each one several
//! times per event.

use std::borrow::Cow;

use serde::de::{self, DeserializeSeed, MapAccess};
use serde_json::value::RawValue;

use crate::json::read::{
    mark_skipped, skip_value, take_skipped, Fields, Fill, LenientCount, LenientObjects, LenientStr,
    NotNull, Obj, OptIndex, OptStr,
};
use crate::stream::Usage;

#[derive(Default)]
pub struct Chunk<'a> {
    pub kind: Option<Cow<'a, str>>,
    pub index: Option<u64>,
    pub block: Option<BlockStart<'a>>,
    pub delta: Option<Delta<'a>>,
    top_usage: Option<Usage>,
    message: Option<Message<'a>>,
    pub has_error: bool,
}

impl Chunk<'_> {
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
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        let slot = match key {
            "type" => &mut self.kind,
            "url" => &mut self.url,
            "title" => &mut self.title,
            _ => return skip_value(map),
        };
        *slot = map.next_value::<LenientStr>()?.0;
        Ok(())
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

impl<'de> Fields<'de> for Chunk<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "type" => self.kind = map.next_value::<OptStr>()?.0,
            "index" => self.index = map.next_value::<OptIndex>()?.0,
            "content_block" => map.next_value_seed(Fill(&mut self.block))?,
            "delta" => map.next_value_seed(Fill(&mut self.delta))?,
            "usage" => self.top_usage = map.next_value::<Obj<Usage>>()?.0,
            "message" => map.next_value_seed(Fill(&mut self.message))?,
            "error" => self.has_error = map.next_value::<NotNull>()?.0,
            _ => skip_value(map)?,
        }
        Ok(())
    }
}

impl<'de> Fields<'de> for BlockStart<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        let slot = match key {
            "content" => {
                self.content = map.next_value::<LenientObjects<SearchResult>>()?.0;
                return Ok(());
            }
            "type" => &mut self.kind,
            "id" => &mut self.id,
            "tool_use_id" => &mut self.tool_use_id,
            "name" => &mut self.name,
            "text" => &mut self.text,
            "thinking" => &mut self.thinking,
            "data" => &mut self.data,
            _ => return skip_value(map),
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
            _ => return skip_value(map),
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
            _ => return skip_value(map),
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
            _ => skip_value(map)?,
        }
        Ok(())
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
/// validating scanner only when part of it was skipped unread ([`Skipped`](crate::json::read::Skipped): serde_json
/// skips lone surrogate escapes, overflowing numbers and any depth) or the read failed
/// (a syntax error anywhere wins over a shape error before it, as with orjson.loads).
#[inline]
pub fn read_chunk<'s, 'a>(
    json: &'a str,
    slot: &'s mut Option<Chunk<'a>>,
) -> Result<&'s Chunk<'a>, ReadError> {
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
