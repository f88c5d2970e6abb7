//! The transducers the server runs, each an upstream's decoder composed with a client
//! protocol's encoder (twin of python/hydra_proxy/transducers.py).
//!
//! [`compositions!`] is the one list of them: these type aliases, the Python classes of
//! python.rs and the property tests are all made from it, so a new composition is one line
//! there. Every decoder is made the same way ([`Upstream`]); the encoder is the client's.

use crate::anthropic::{AnthropicDecoder, AnthropicEncoder};
use crate::chat::{ChatDecoder, ChatEncoder};
use crate::gemini::{GeminiDecoder, GeminiEncoder};
use crate::responses::{ResponsesDecoder, ResponsesEncoder};
use crate::stream::{Decoder, Transducer};

/// Hands `$then!` every composition as `Name: Decoder => Encoder,` (a composition of an
/// upstream with a client of the same protocol is passed through, not transduced).
/// Exported for the fuzz targets, which read the same table.
#[doc(hidden)]
#[macro_export]
macro_rules! compositions {
    ($then:ident) => {
        $then! {
            AnthropicViaChatStream: ChatDecoder => AnthropicEncoder,
            ChatViaAnthropicStream: AnthropicDecoder => ChatEncoder,
            AnthropicViaGeminiStream: GeminiDecoder => AnthropicEncoder,
            ChatViaGeminiStream: GeminiDecoder => ChatEncoder,
            ResponsesViaChatStream: ChatDecoder => ResponsesEncoder,
            ResponsesViaAnthropicStream: AnthropicDecoder => ResponsesEncoder,
            AnthropicViaResponsesStream: ResponsesDecoder => AnthropicEncoder,
            ChatViaResponsesStream: ResponsesDecoder => ChatEncoder,
            ResponsesViaGeminiStream: GeminiDecoder => ResponsesEncoder,
            GeminiViaChatStream: ChatDecoder => GeminiEncoder,
            GeminiViaAnthropicStream: AnthropicDecoder => GeminiEncoder,
            GeminiViaResponsesStream: ResponsesDecoder => GeminiEncoder,
        }
    };
}
pub use compositions;

macro_rules! aliases {
    ($($name:ident: $decoder:ident => $encoder:ident,)*) => {
        $(
            #[doc = concat!(stringify!($decoder), " composed with ", stringify!($encoder), ".")]
            pub type $name = Transducer<$decoder, $encoder>;
        )*
    };
}
compositions!(aliases);

/// An upstream's decoder as a composition makes it: `reply_id` is the id of the client's
/// reply, which names the tool calls an upstream sends without an id of its own;
/// `signing_key` signs the replay state (reasoning, thought signatures) a client must send
/// back for the upstream to go on.
pub trait Upstream: Decoder {
    fn upstream(reply_id: &str, signing_key: Option<&[u8]>) -> Self;
}

impl Upstream for ChatDecoder {
    fn upstream(reply_id: &str, signing_key: Option<&[u8]>) -> Self {
        ChatDecoder::new(reply_id, signing_key)
    }
}

/// An Anthropic stream names its own tool calls and signs its own thinking.
impl Upstream for AnthropicDecoder {
    fn upstream(_reply_id: &str, _signing_key: Option<&[u8]>) -> Self {
        AnthropicDecoder::new()
    }
}

impl Upstream for GeminiDecoder {
    fn upstream(reply_id: &str, signing_key: Option<&[u8]>) -> Self {
        GeminiDecoder::new(reply_id, signing_key)
    }
}

impl Upstream for ResponsesDecoder {
    fn upstream(reply_id: &str, signing_key: Option<&[u8]>) -> Self {
        ResponsesDecoder::new(reply_id, signing_key)
    }
}
