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

use serde::de::{
    self, Deserialize, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor,
};

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

/// A JSON value's kind as a [`Leaf`] reader sees it. A string's text is kept only for a
/// reader that wants it ([`Leaf::KEEPS_STR`]), so an escaped string it ignores is not copied.
pub enum Seen<'de> {
    Null,
    Bool,
    /// A non-negative integer.
    Count(u64),
    /// A negative integer or a float.
    Number,
    Str(Option<Cow<'de, str>>),
    Array,
    Object,
}

/// A value read from one JSON value by its kind alone; the kind it does not take is an
/// error (serde's, naming [`Leaf::EXPECTING`]). Arrays and objects a reader takes are
/// skipped unread unless it reads them itself ([`Leaf::array`], [`Leaf::object`]).
pub trait Leaf<'de>: Sized {
    const EXPECTING: &'static str;
    const KEEPS_STR: bool = false;
    fn leaf(seen: Seen<'de>) -> Option<Self>;

    fn array<A: SeqAccess<'de>>(seq: A) -> Result<Option<Self>, A::Error> {
        skipped_unless_refused(Self::leaf(Seen::Array), || IgnoredAny.visit_seq(seq))
    }

    fn object<A: MapAccess<'de>>(map: A) -> Result<Option<Self>, A::Error> {
        skipped_unless_refused(Self::leaf(Seen::Object), || IgnoredAny.visit_map(map))
    }
}

/// `value`, once the container it was read from is skipped; nothing is read when refused.
#[inline]
fn skipped_unless_refused<T, E>(
    value: Option<T>,
    skip: impl FnOnce() -> Result<IgnoredAny, E>,
) -> Result<Option<T>, E> {
    if value.is_some() {
        mark_skipped();
        skip()?;
    }
    Ok(value)
}

/// The one visitor of every [`Leaf`].
struct LeafVisitor<T>(PhantomData<T>);

impl<T> LeafVisitor<T> {
    fn new() -> Self {
        LeafVisitor(PhantomData)
    }
}

impl<'de, T: Leaf<'de>> LeafVisitor<T> {
    fn take<E: de::Error>(self, seen: Seen<'de>, what: de::Unexpected) -> Result<T, E> {
        T::leaf(seen).ok_or_else(|| E::invalid_type(what, &self))
    }

    fn text(s: impl FnOnce() -> Cow<'de, str>) -> Seen<'de> {
        Seen::Str(T::KEEPS_STR.then(s))
    }
}

impl<'de, T: Leaf<'de>> Visitor<'de> for LeafVisitor<T> {
    type Value = T;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(T::EXPECTING)
    }
    fn visit_unit<E: de::Error>(self) -> Result<T, E> {
        self.take(Seen::Null, de::Unexpected::Unit)
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<T, E> {
        self.take(Seen::Bool, de::Unexpected::Bool(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<T, E> {
        self.take(Seen::Count(v), de::Unexpected::Unsigned(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<T, E> {
        self.take(Seen::Number, de::Unexpected::Signed(v))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<T, E> {
        near_overflow(v);
        self.take(Seen::Number, de::Unexpected::Float(v))
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<T, E> {
        self.take(Self::text(|| Cow::Borrowed(v)), de::Unexpected::Str(v))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
        self.take(
            Self::text(|| Cow::Owned(v.to_owned())),
            de::Unexpected::Str(v),
        )
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<T, E> {
        match T::KEEPS_STR {
            true => self.take(
                Seen::Str(Some(Cow::Owned(v))),
                de::Unexpected::Other("string"),
            ),
            false => self.visit_str(&v),
        }
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<T, A::Error> {
        T::array(seq)?.ok_or_else(|| de::Error::invalid_type(de::Unexpected::Seq, &self))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
        T::object(map)?.ok_or_else(|| de::Error::invalid_type(de::Unexpected::Map, &self))
    }
}

/// `Deserialize` for [`Leaf`] types (a blanket impl is not allowed for a foreign trait).
macro_rules! deserialize_leaf {
    (impl<$($g:tt),*> for $ty:ty) => {
        impl<'de, $($g),*> Deserialize<'de> for $ty where $ty: Leaf<'de> {
            #[inline]
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                d.deserialize_any(LeafVisitor::new())
            }
        }
    };
    ($($ty:ty),* $(,)?) => {$(
        impl<'de> Deserialize<'de> for $ty {
            #[inline]
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                d.deserialize_any(LeafVisitor::new())
            }
        }
    )*};
}

/// A string or null; any other type is an error.
pub struct OptStr<'a>(pub Option<Cow<'a, str>>);

impl<'de> Leaf<'de> for OptStr<'de> {
    const EXPECTING: &'static str = "a string or null";
    const KEEPS_STR: bool = true;
    fn leaf(seen: Seen<'de>) -> Option<Self> {
        match seen {
            Seen::Null => Some(OptStr(None)),
            Seen::Str(text) => Some(OptStr(text)),
            _ => None,
        }
    }
}

/// A non-negative integer or null; any other type is an error.
pub struct OptIndex(pub Option<u64>);

impl Leaf<'_> for OptIndex {
    const EXPECTING: &'static str = "a non-negative integer or null";
    fn leaf(seen: Seen) -> Option<Self> {
        match seen {
            Seen::Null => Some(OptIndex(None)),
            Seen::Count(v) => Some(OptIndex(Some(v))),
            _ => None,
        }
    }
}

/// A non-negative integer, or None for anything else (which is consumed and ignored).
pub struct LenientCount(pub Option<u64>);

impl Leaf<'_> for LenientCount {
    const EXPECTING: &'static str = "any value";
    fn leaf(seen: Seen) -> Option<Self> {
        Some(LenientCount(match seen {
            Seen::Count(v) => Some(v),
            _ => None,
        }))
    }
}

/// A string, or None for anything else (which is consumed and ignored): for fields read
/// only as information, where an odd value must not reject the event.
pub struct LenientStr<'a>(pub Option<Cow<'a, str>>);

impl<'de> Leaf<'de> for LenientStr<'de> {
    const EXPECTING: &'static str = "any value";
    const KEEPS_STR: bool = true;
    fn leaf(seen: Seen<'de>) -> Option<Self> {
        Some(LenientStr(match seen {
            Seen::Str(text) => text,
            _ => None,
        }))
    }
}

/// Whether a value is present and not null.
pub struct NotNull(pub bool);

impl Leaf<'_> for NotNull {
    const EXPECTING: &'static str = "any value";
    fn leaf(seen: Seen) -> Option<Self> {
        Some(NotNull(!matches!(seen, Seen::Null)))
    }
}

deserialize_leaf!(
    OptStr<'de>,
    OptIndex,
    LenientCount,
    LenientStr<'de>,
    NotNull
);

/// An object key, borrowed from the input unless it holds escapes (serde's own
/// `Cow<str>` always allocates).
pub struct Key<'a>(pub Cow<'a, str>);

impl<'de> Leaf<'de> for Key<'de> {
    const EXPECTING: &'static str = "an object key";
    const KEEPS_STR: bool = true;
    fn leaf(seen: Seen<'de>) -> Option<Self> {
        match seen {
            Seen::Str(Some(key)) => Some(Key(key)),
            _ => None,
        }
    }
}

impl<'de> Deserialize<'de> for Key<'de> {
    #[inline]
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(LeafVisitor::new())
    }
}

// -- objects -----------------------------------------------------------------------------

/// An object read key by key. `LENIENT`: a value of another type is absent rather than an
/// error (usage blocks); null is always absent.
pub trait Fields<'de>: Default {
    const LENIENT: bool = false;
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error>;
}

/// The value of an object member read for nothing (for the `_` arm of [`Fields::field`]).
#[inline]
pub fn skip_value<'de, A: MapAccess<'de>>(map: &mut A) -> Result<(), A::Error> {
    map.next_value::<Skipped>().map(|_| ())
}

/// An object of `T` read into `slot` in place (large objects are not moved through serde's
/// layers): null is None, another type an error; a repeated key starts the object afresh.
pub struct Fill<'s, T>(pub &'s mut Option<T>);

impl<'de, T: Fields<'de>> DeserializeSeed<'de> for Fill<'_, T> {
    type Value = ();
    #[inline]
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

/// The other types are serde's errors, naming what was expected.
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
        read_fields(self.0.insert(T::default()), &mut map)
    }
}

fn read_fields<'de, T: Fields<'de>, A: MapAccess<'de>>(
    value: &mut T,
    map: &mut A,
) -> Result<(), A::Error> {
    while let Some(Key(key)) = map.next_key::<Key>()? {
        value.field(&key, map)?;
    }
    Ok(())
}

/// A `LENIENT` object: any value but an object reads as None.
struct LenientObj<T>(Option<T>);

impl<'de, T: Fields<'de>> Leaf<'de> for LenientObj<T> {
    const EXPECTING: &'static str = "any value";
    fn leaf(_: Seen<'de>) -> Option<Self> {
        Some(LenientObj(None))
    }
    fn object<A: MapAccess<'de>>(mut map: A) -> Result<Option<Self>, A::Error> {
        let mut value = T::default();
        read_fields(&mut value, &mut map)?;
        Ok(Some(LenientObj(Some(value))))
    }
}

deserialize_leaf!(impl<T> for LenientObj<T>);

/// An object of `T`, or null (None); other types are an error unless `T::LENIENT`.
pub struct Obj<T>(pub Option<T>);

impl<'de, T: Fields<'de>> Deserialize<'de> for Obj<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        if T::LENIENT {
            return LenientObj::deserialize(d).map(|LenientObj(value)| Obj(value));
        }
        let mut value = None;
        Fill(&mut value).deserialize(d)?;
        Ok(Obj(value))
    }
}

/// An array of objects of `T`, or null (empty); null elements and other types are errors.
pub struct Objects<T>(pub Vec<T>);

impl<'de, T: Fields<'de>> Leaf<'de> for Objects<T> {
    const EXPECTING: &'static str = "an array of objects or null";
    fn leaf(seen: Seen<'de>) -> Option<Self> {
        matches!(seen, Seen::Null).then(|| Objects(Vec::new()))
    }
    fn array<A: SeqAccess<'de>>(mut seq: A) -> Result<Option<Self>, A::Error> {
        let mut items = Vec::new();
        while let Some(Obj(item)) = seq.next_element::<Obj<T>>()? {
            let Some(item) = item else {
                return Err(de::Error::invalid_type(
                    de::Unexpected::Unit,
                    &LeafVisitor::<Self>::new(),
                ));
            };
            items.push(item);
        }
        Ok(Some(Objects(items)))
    }
}

deserialize_leaf!(impl<T> for Objects<T>);

/// The objects of an array, read as `LENIENT` objects whatever `T` says: elements that are
/// not objects are left out, and any other value is none (for information only).
pub struct LenientObjects<T>(pub Vec<T>);

impl<'de, T: Fields<'de>> Leaf<'de> for LenientObjects<T> {
    const EXPECTING: &'static str = "any value";
    fn leaf(_: Seen<'de>) -> Option<Self> {
        Some(LenientObjects(Vec::new()))
    }
    fn array<A: SeqAccess<'de>>(mut seq: A) -> Result<Option<Self>, A::Error> {
        let mut items = Vec::new();
        while let Some(LenientObj(item)) = seq.next_element::<LenientObj<T>>()? {
            items.extend(item);
        }
        Ok(Some(LenientObjects(items)))
    }
}

deserialize_leaf!(impl<T> for LenientObjects<T>);
