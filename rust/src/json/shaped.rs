//! Typed values over the validating scanner, for readers that judge a field's type as the
//! Python twins do (a field that is present and not null must have its type).
//!
//! A value of the wrong type is `Ok(Err(Bad))`: the reader records it for its field (a
//! later occurrence of the key overwrites it, as in a Python dict) while the scan goes on,
//! so that a syntax error anywhere later still makes the text invalid JSON rather than of
//! an unexpected shape. `depth` arguments count the containers enclosing the value.

use std::borrow::Cow;

use super::scan::{Mark, Result, Scanner};

/// A value of the wrong type.
#[derive(Debug, Clone, Copy)]
pub struct Bad;

pub type Shaped<T> = std::result::Result<T, Bad>;

/// A value `read` reads, starting at a byte `starts` accepts, or null; `Err(Bad)` (and the
/// value skipped) for any other.
#[inline(always)]
fn nullable<'a, T>(
    s: &mut Scanner<'a>,
    depth: u32,
    starts: impl FnOnce(u8) -> bool,
    read: impl FnOnce(&mut Scanner<'a>) -> Result<Shaped<T>>,
) -> Result<Shaped<Option<T>>> {
    match s.ws() {
        b'n' => {
            s.null()?;
            Ok(Ok(None))
        }
        b if starts(b) => Ok(read(s)?.map(Some)),
        _ => {
            s.skip_value(depth)?;
            Ok(Err(Bad))
        }
    }
}

/// A string or null.
#[inline]
pub fn opt_str<'a>(s: &mut Scanner<'a>, depth: u32) -> Result<Shaped<Option<Cow<'a, str>>>> {
    string_or_null::<false>(s, depth)
}

/// A string or null; with the scanner's `record` on, the string's place is marked (the
/// Chat reader's template, chat/chunk/cache.rs).
#[inline]
pub fn opt_str_marked<'a>(s: &mut Scanner<'a>, depth: u32) -> Result<Shaped<Option<Cow<'a, str>>>> {
    string_or_null::<true>(s, depth)
}

#[inline(always)]
fn string_or_null<'a, const MARK: bool>(
    s: &mut Scanner<'a>,
    depth: u32,
) -> Result<Shaped<Option<Cow<'a, str>>>> {
    match s.ws() {
        b'"' => {
            s.pos += 1;
            let start = s.pos;
            let text = s.string()?;
            if MARK && s.record {
                s.marks.push(Mark {
                    start,
                    end: s.pos - 1,
                    // Unique while the text lives: a borrowed one's place in the input, an
                    // unescaped one's allocation.
                    text: text.as_ptr() as usize,
                });
            }
            Ok(Ok(Some(text)))
        }
        b'n' => {
            s.null()?;
            Ok(Ok(None))
        }
        _ => {
            s.skip_value(depth)?;
            Ok(Err(Bad))
        }
    }
}

/// A non-negative integer or null.
#[inline]
pub fn opt_index(s: &mut Scanner<'_>, depth: u32) -> Result<Shaped<Option<u64>>> {
    let starts = |b| matches!(b, b'-' | b'0'..=b'9');
    nullable(s, depth, starts, |s| Ok(s.number()?.ok_or(Bad)))
}

/// A bool or null.
#[inline]
pub fn opt_bool(s: &mut Scanner<'_>, depth: u32) -> Result<Shaped<Option<bool>>> {
    match s.ws() {
        b't' => s.literal(b"true").map(|()| Ok(Some(true))),
        b'f' => s.literal(b"false").map(|()| Ok(Some(false))),
        b'n' => s.null().map(|()| Ok(None)),
        _ => {
            s.skip_value(depth)?;
            Ok(Err(Bad))
        }
    }
}

/// A token count, leniently: a non-negative integer, or None for anything else.
#[inline]
pub fn count(s: &mut Scanner<'_>, depth: u32) -> Result<Option<u64>> {
    match s.ws() {
        b'-' | b'0'..=b'9' => s.number(),
        _ => {
            s.skip_value(depth)?;
            Ok(None)
        }
    }
}

/// An object read leniently by `members` (the cursor past its `{`, its members at
/// `depth`); anything else is skipped and absent.
#[inline]
pub fn lenient_object<'a, T>(
    s: &mut Scanner<'a>,
    depth: u32,
    members: impl FnOnce(&mut Scanner<'a>) -> Result<T>,
) -> Result<Option<T>> {
    if s.ws() != b'{' {
        s.skip_value(depth - 1)?;
        return Ok(None);
    }
    s.pos += 1;
    members(s).map(Some)
}

/// The member `key` of an object, read by `read`, its other members (at `depth`; the
/// cursor is past the `{`) skipped; None if it has none. A repeated key's last value wins.
#[inline]
pub fn member<'a, T>(
    s: &mut Scanner<'a>,
    depth: u32,
    key: &str,
    mut read: impl FnMut(&mut Scanner<'a>) -> Result<T>,
) -> Result<Option<T>> {
    let mut value = None;
    s.members(|s, k| {
        if k == key {
            value = Some(read(s)?);
        } else {
            s.skip_value(depth)?;
        }
        Ok(())
    })?;
    Ok(value)
}

/// An object read by `members` (its members are at `depth + 1`), or null.
#[inline]
pub fn object<'a, T>(
    s: &mut Scanner<'a>,
    depth: u32,
    members: impl FnOnce(&mut Scanner<'a>) -> Result<Shaped<T>>,
) -> Result<Shaped<Option<T>>> {
    nullable(
        s,
        depth,
        |b| b == b'{',
        |s| {
            s.pos += 1;
            members(s)
        },
    )
}

/// An array of objects, each read by `members` (theirs are at `depth + 2`), or null
/// (empty); an element that is no object is wrong.
pub fn objects<'a, T>(
    s: &mut Scanner<'a>,
    depth: u32,
    mut members: impl FnMut(&mut Scanner<'a>) -> Result<Shaped<T>>,
) -> Result<Shaped<Vec<T>>> {
    let mut items = Ok(Vec::new());
    let shaped = elements(s, depth, |s, object| {
        if !object {
            items = Err(Bad);
            return Ok(());
        }
        match (members(s)?, &mut items) {
            (Ok(item), Ok(list)) => list.push(item),
            (Err(Bad), _) => items = Err(Bad),
            _ => {}
        }
        Ok(())
    })?;
    Ok(shaped.and(items))
}

/// An array, each element handed to `element` with whether it is an object (then the
/// cursor is past its `{`; else the element has been skipped), or null; `Err(Bad)` for
/// anything else.
#[inline]
pub fn elements<'a>(
    s: &mut Scanner<'a>,
    depth: u32,
    mut element: impl FnMut(&mut Scanner<'a>, bool) -> Result<()>,
) -> Result<Shaped<()>> {
    match s.ws() {
        b'[' => {
            s.pos += 1;
            s.elements(|s| {
                if s.ws() == b'{' {
                    s.pos += 1;
                    element(s, true)
                } else {
                    s.skip_value(depth + 1)?;
                    element(s, false)
                }
            })?;
            Ok(Ok(()))
        }
        b'n' => {
            s.null()?;
            Ok(Ok(()))
        }
        _ => {
            s.skip_value(depth)?;
            Ok(Err(Bad))
        }
    }
}
