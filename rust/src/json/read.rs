//! JSON input helpers: hand-written serde visitors for reading upstream events fast.
//!
//! Strings borrow from the input when they hold no escapes (no allocation on the hot
//! path); `null` means absent while any other wrong type is an error (derived visitors would
//! accept an array for a struct); counts can be lenient (a value that is not a
//! non-negative integer is ignored). Objects are read key by key through [`Fields`], so a
//! repeated key keeps its last value, as Python's dict does.

use std::borrow::Cow;
use std::cell::Cell;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

// -- values skipped unread -----------------------------------------------------------------

thread_local! {
    static SKIPPED: Cell<bool> = const { Cell::new(false) };
}

/// Note that a value was skipped unread. serde_json checks what it reads (strings,
/// surrogates, numbers) as strictly as orjson does, but not what it skips, so a reader
/// that must judge its text by orjson's rules validates the whole text only when
/// something was skipped ([`take_skipped`]).
#[inline]
pub fn mark_skipped() {
    SKIPPED.with(|s| s.set(true));
}

/// Whether a value was skipped since the last call (and clear the note).
#[inline]
pub fn take_skipped() -> bool {
    SKIPPED.with(|s| s.replace(false))
}

/// A float read at the edge of f64's range: serde_json's float parsing is not correctly
/// rounded there, so whether orjson takes the text is left to the validating scanner.
#[inline]
fn near_overflow(v: f64) {
    if v.abs() >= 1e308 {
        mark_skipped();
    }
}

/// Any value, skipped unread (noted by [`mark_skipped`]).
pub struct Skipped;

impl<'de> Deserialize<'de> for Skipped {
    #[inline]
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        mark_skipped();
        IgnoredAny::deserialize(d)?;
        Ok(Skipped)
    }
}

// -- leaf values -------------------------------------------------------------------------

/// A string or null; any other type is an error.
pub struct OptStr<'a>(pub Option<Cow<'a, str>>);

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
pub struct Key<'a>(pub Cow<'a, str>);

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
pub struct OptIndex(pub Option<u64>);

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
pub struct LenientCount(pub Option<u64>);

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
            fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
                near_overflow(v);
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
                mark_skipped();
                IgnoredAny.visit_seq(seq)?;
                Ok(LenientCount(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                mark_skipped();
                IgnoredAny.visit_map(map)?;
                Ok(LenientCount(None))
            }
        }
        d.deserialize_any(V)
    }
}

/// A string, or None for anything else (which is consumed and ignored): for fields read
/// only as information, where an odd value must not reject the event.
pub struct LenientStr<'a>(pub Option<Cow<'a, str>>);

impl<'de> Deserialize<'de> for LenientStr<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = LenientStr<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any value")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(LenientStr(Some(Cow::Borrowed(v))))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(LenientStr(Some(Cow::Owned(v.to_owned()))))
            }
            fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
                Ok(LenientStr(Some(Cow::Owned(v))))
            }
            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(LenientStr(None))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(LenientStr(None))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
                near_overflow(v);
                Ok(LenientStr(None))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(LenientStr(None))
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(LenientStr(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                mark_skipped();
                IgnoredAny.visit_seq(seq)?;
                Ok(LenientStr(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                mark_skipped();
                IgnoredAny.visit_map(map)?;
                Ok(LenientStr(None))
            }
        }
        d.deserialize_any(V)
    }
}

/// Whether a value is present and not null.
pub struct NotNull(pub bool);

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
            fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
                near_overflow(v);
                Ok(NotNull(true))
            }
            fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
                Ok(NotNull(true))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                mark_skipped();
                IgnoredAny.visit_seq(seq)?;
                Ok(NotNull(true))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                mark_skipped();
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
pub trait Fields<'de>: Default {
    const LENIENT: bool = false;
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error>;
}

/// An object of `T`, or null (None); other types are an error unless `T::LENIENT`.
pub struct Obj<T>(pub Option<T>);

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
                    mark_skipped();
                    IgnoredAny.visit_seq(seq)?;
                }
                self.other(de::Unexpected::Seq)
            }
        }
        d.deserialize_any(V(PhantomData))
    }
}

/// An array of objects of `T`, or null (empty); null elements and other types are errors.
pub struct Objects<T>(pub Vec<T>);

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
