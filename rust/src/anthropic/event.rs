//! Reading one Anthropic Messages stream event, the Anthropic decoder's reader (twin of
//! `_read_event` in python/hydra_proxy/anthropic/decoder.py): only the fields the decoder
//! uses, the whole event checked before any of it is acted on.

use std::borrow::Cow;

use serde::de::{IgnoredAny, MapAccess};
use serde_json::value::RawValue;

use crate::json::read::{Fields, LenientCount, LenientStr, NotNull, Obj, OptIndex, OptStr};

#[derive(Default)]
pub struct Event<'a> {
    pub kind: Option<Cow<'a, str>>,
    pub index: Option<u64>,
    pub block: Option<BlockStart<'a>>,
    pub delta: Option<Delta<'a>>,
    pub usage: Option<Usage>,
    /// message_start's message id and model (read leniently: information only).
    pub message_id: Option<Cow<'a, str>>,
    pub message_model: Option<Cow<'a, str>>,
    pub has_error: bool,
}

#[derive(Default)]
pub struct BlockStart<'a> {
    pub kind: Option<Cow<'a, str>>,
    pub id: Option<Cow<'a, str>>,
    pub name: Option<Cow<'a, str>>,
    pub text: Option<Cow<'a, str>>,
    pub thinking: Option<Cow<'a, str>>,
    pub data: Option<Cow<'a, str>>,
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

#[derive(Default, Clone, Copy)]
pub struct Usage {
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub cache_read_input_tokens: Option<u64>,
    pub cache_creation_input_tokens: Option<u64>,
}

#[derive(Default)]
struct EventFields<'a> {
    event: Event<'a>,
    top_usage: Option<Usage>,
    message: Option<MessageFields<'a>>,
}

impl<'de> Fields<'de> for EventFields<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        let e = &mut self.event;
        match key {
            "type" => e.kind = map.next_value::<OptStr>()?.0,
            "index" => e.index = map.next_value::<OptIndex>()?.0,
            "content_block" => e.block = map.next_value::<Obj<BlockStart>>()?.0,
            "delta" => e.delta = map.next_value::<Obj<Delta>>()?.0,
            "usage" => self.top_usage = map.next_value::<Obj<Usage>>()?.0,
            "message" => self.message = map.next_value::<Obj<MessageFields>>()?.0,
            "error" => e.has_error = map.next_value::<NotNull>()?.0,
            _ => {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

impl<'de> Fields<'de> for BlockStart<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        let slot = match key {
            "type" => &mut self.kind,
            "id" => &mut self.id,
            "name" => &mut self.name,
            "text" => &mut self.text,
            "thinking" => &mut self.thinking,
            "data" => &mut self.data,
            _ => {
                map.next_value::<IgnoredAny>()?;
                return Ok(());
            }
        };
        *slot = map.next_value::<OptStr>()?.0;
        Ok(())
    }
}

impl<'de> Fields<'de> for Delta<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        if key == "citation" {
            self.citation = map.next_value::<Option<&'de RawValue>>()?;
            return Ok(());
        }
        let slot = match key {
            "type" => &mut self.kind,
            "text" => &mut self.text,
            "thinking" => &mut self.thinking,
            "signature" => &mut self.signature,
            "partial_json" => &mut self.partial_json,
            "stop_reason" => &mut self.stop_reason,
            _ => {
                map.next_value::<IgnoredAny>()?;
                return Ok(());
            }
        };
        *slot = map.next_value::<OptStr>()?.0;
        Ok(())
    }
}

impl<'de> Fields<'de> for Usage {
    const LENIENT: bool = true;
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        let slot = match key {
            "input_tokens" => &mut self.input_tokens,
            "output_tokens" => &mut self.output_tokens,
            "cache_read_input_tokens" => &mut self.cache_read_input_tokens,
            "cache_creation_input_tokens" => &mut self.cache_creation_input_tokens,
            _ => {
                map.next_value::<IgnoredAny>()?;
                return Ok(());
            }
        };
        *slot = map.next_value::<LenientCount>()?.0;
        Ok(())
    }
}

/// message_start's `message`: its usage, id and model, all read leniently.
#[derive(Default)]
struct MessageFields<'a> {
    usage: Option<Usage>,
    id: Option<Cow<'a, str>>,
    model: Option<Cow<'a, str>>,
}

impl<'de> Fields<'de> for MessageFields<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "usage" => self.usage = map.next_value::<Obj<Usage>>()?.0,
            "id" => self.id = map.next_value::<LenientStr>()?.0,
            "model" => self.model = map.next_value::<LenientStr>()?.0,
            _ => {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

/// Parse one event; `Err` carries serde_json's error (syntax vs unexpected shape).
#[inline]
pub fn read_event(json: &str) -> Result<Event<'_>, serde_json::Error> {
    let Obj(fields) = serde_json::from_str::<Obj<EventFields>>(json)?;
    let Some(fields) = fields else {
        return Err(serde::de::Error::invalid_type(
            serde::de::Unexpected::Unit,
            &"an object",
        ));
    };
    let mut event = fields.event;
    let message = fields.message.unwrap_or_default();
    event.usage = fields.top_usage.or(message.usage);
    event.message_id = message.id;
    event.message_model = message.model;
    Ok(event)
}
