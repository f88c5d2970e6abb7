//! Incremental Server-Sent Events parser (twin of python/hydra_proxy/sse.py).
//!
//! WHATWG event-stream rules: lines end in CRLF, LF or CR (a CR ending one chunk and an LF
//! starting the next are one line end); `:` lines are comments; `data:` lines accumulate,
//! joined by LF; a blank line dispatches; `event:` names the event; a leading UTF-8 BOM is
//! dropped. Input may be split anywhere, including inside a UTF-8 character.
//!
//! Unlike a browser, an event still pending at end of input is dispatched: upstreams that
//! omit the final blank line must not lose their last event ([`SseParser::in_event`] says
//! there is one, so a cut inside it can be told from a clean end). Memory is bounded: the
//! bytes buffered for one event (its partial line, data and name) past `max_event_bytes` set
//! `error`. So does a line that is no SSE field at all (a field name that is not a token: an
//! HTML page, binary): a browser would skip it, but from an upstream it means the body is
//! not an event stream. Events completed before the error are still delivered, nothing is
//! parsed after it, and the buffers are released.

use crate::stream::messages::{MSG_EVENT_TOO_LARGE, MSG_NOT_EVENT_STREAM};

const BOM: &[u8] = b"\xef\xbb\xbf";

pub struct SseParser {
    max: usize,
    /// Bytes of the current, not yet terminated line.
    pending: Vec<u8>,
    /// The previous chunk ended in CR: a leading LF is its pair.
    skip_lf: bool,
    /// The BOM check has been done.
    started: bool,
    event: Option<Vec<u8>>,
    data: Vec<u8>,
    has_data: bool,
    error: Option<String>,
}

/// Why parsing stopped.
enum Stop {
    TooLarge,
    NotSse,
}

/// A field name as SSE streams write them (`data`, `event`, `id`, `retry`, or any other
/// token); anything else is not an event stream.
fn is_field_name(name: &[u8]) -> bool {
    name.iter()
        .all(|b| b.is_ascii_alphanumeric() || *b == b'-' || *b == b'_')
}

impl SseParser {
    pub fn new(max_event_bytes: usize) -> Self {
        SseParser {
            max: max_event_bytes,
            pending: Vec::new(),
            skip_lf: false,
            started: false,
            event: None,
            data: Vec::new(),
            has_data: false,
            error: None,
        }
    }

    /// Set once the bounds are exceeded or the input is not SSE; the parser then yields
    /// nothing more.
    pub fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }

    /// The bytes held for the event being read (partial line, data, name): at most
    /// `max_event_bytes` between calls.
    pub fn buffered_bytes(&self) -> usize {
        self.pending.len() + self.data.len() + self.event.as_ref().map_or(0, Vec::len)
    }

    /// Part of an event is buffered, not yet ended by a blank line (a partial comment line
    /// is not): at end of input, the stream was cut inside that event.
    pub fn in_event(&self) -> bool {
        self.has_data || self.event.is_some() || self.pending.first().is_some_and(|b| *b != b':')
    }

    fn stop(&mut self, stop: Stop) {
        self.error = Some(match stop {
            Stop::TooLarge => MSG_EVENT_TOO_LARGE.replace("{}", &self.max.to_string()),
            Stop::NotSse => MSG_NOT_EVENT_STREAM.to_owned(),
        });
        self.pending = Vec::new();
        self.data = Vec::new();
        self.event = None;
        self.has_data = false;
    }

    /// Parse `chunk`, calling `on_event(event name, data)` for every complete event.
    pub fn feed<F: FnMut(Option<&[u8]>, &[u8])>(&mut self, chunk: &[u8], mut on_event: F) {
        if chunk.is_empty() || self.error.is_some() {
            return;
        }
        let mut chunk = chunk;
        if self.skip_lf {
            self.skip_lf = false;
            if chunk[0] == b'\n' {
                chunk = &chunk[1..];
            }
        }
        if !self.started {
            let total = self.pending.len() + chunk.len();
            let head_is_bom_prefix = self
                .pending
                .iter()
                .chain(chunk.iter())
                .zip(BOM.iter())
                .all(|(a, b)| a == b);
            if total < 3 && head_is_bom_prefix {
                self.pending.extend_from_slice(chunk);
                return;
            }
            self.started = true;
            if head_is_bom_prefix {
                // pending holds only BOM bytes here: drop them and the rest of the BOM.
                chunk = &chunk[3 - self.pending.len()..];
                self.pending.clear();
            }
        }
        if let Err(stop) = self.lines(chunk, &mut on_event) {
            return self.stop(stop);
        }
        if self.buffered_bytes() > self.max {
            self.stop(Stop::TooLarge);
        }
    }

    /// End of input: the unterminated last line and the pending event are dispatched.
    pub fn finish<F: FnMut(Option<&[u8]>, &[u8])>(&mut self, mut on_event: F) {
        if self.error.is_some() {
            return;
        }
        let mut line = std::mem::take(&mut self.pending);
        if !self.started && line.starts_with(BOM) {
            line.drain(..3);
        }
        self.started = true;
        let mut result = Ok(());
        if !line.is_empty() {
            result = self.line(&line, &mut on_event);
        }
        if result.is_ok() {
            result = self.line(b"", &mut on_event);
        }
        if let Err(stop) = result {
            self.stop(stop);
        }
    }

    fn lines<F: FnMut(Option<&[u8]>, &[u8])>(
        &mut self,
        chunk: &[u8],
        on_event: &mut F,
    ) -> Result<(), Stop> {
        let mut rest = chunk;
        while let Some(end) = memchr::memchr2(b'\n', b'\r', rest) {
            let mut next = end + 1;
            if rest[end] == b'\r' {
                if next < rest.len() {
                    if rest[next] == b'\n' {
                        next += 1;
                    }
                } else {
                    self.skip_lf = true;
                }
            }
            if self.pending.is_empty() {
                self.line(&rest[..end], on_event)?;
            } else {
                let mut line = std::mem::take(&mut self.pending);
                line.extend_from_slice(&rest[..end]);
                let result = self.line(&line, on_event);
                line.clear();
                self.pending = line; // keep the allocation
                result?;
            }
            rest = &rest[next..];
        }
        self.pending.extend_from_slice(rest);
        Ok(())
    }

    fn line<F: FnMut(Option<&[u8]>, &[u8])>(
        &mut self,
        line: &[u8],
        on_event: &mut F,
    ) -> Result<(), Stop> {
        if line.is_empty() {
            if self.has_data {
                on_event(self.event.as_deref(), &self.data);
                self.data.clear();
                self.has_data = false;
            }
            self.event = None;
            return Ok(());
        }
        if line[0] == b':' {
            return Ok(());
        }
        let (name, value) = match memchr::memchr(b':', line) {
            None => (line, &b""[..]),
            Some(colon) => {
                let value = &line[colon + 1..];
                let value = value.strip_prefix(b" ").unwrap_or(value);
                (&line[..colon], value)
            }
        };
        match name {
            b"data" => {
                let size = self.data.len() + value.len() + usize::from(self.has_data);
                if size > self.max {
                    return Err(Stop::TooLarge);
                }
                if self.has_data {
                    self.data.push(b'\n');
                }
                self.data.extend_from_slice(value);
                self.has_data = true;
            }
            b"event" => self.event = Some(value.to_vec()),
            _ if !is_field_name(name) => return Err(Stop::NotSse),
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Events = Vec<(Option<String>, String)>;

    fn parse_split(input: &[u8], max: usize, splits: &[usize]) -> (Events, Option<String>) {
        let mut parser = SseParser::new(max);
        let mut events = Vec::new();
        let mut push = |e: Option<&[u8]>, d: &[u8]| {
            events.push((
                e.map(|e| String::from_utf8_lossy(e).into_owned()),
                String::from_utf8_lossy(d).into_owned(),
            ));
        };
        let mut start = 0;
        for &split in splits {
            parser.feed(&input[start..split], &mut push);
            start = split;
        }
        parser.feed(&input[start..], &mut push);
        parser.finish(&mut push);
        (events, parser.error().map(str::to_owned))
    }

    fn parse(input: &[u8]) -> Events {
        parse_split(input, 1 << 20, &[]).0
    }

    fn ev(event: Option<&str>, data: &str) -> (Option<String>, String) {
        (event.map(str::to_owned), data.to_owned())
    }

    #[test]
    fn every_split_gives_the_same_events() {
        let input = "\u{feff}: comment\r\nevent: a\r\ndata: x\u{e9}\u{1f600}\r\ndata:y\r\n\r\ndata: z\rdata: w\r\r\n\ndata: last\n\n".as_bytes();
        let whole = parse(input);
        assert_eq!(
            whole,
            vec![ev(Some("a"), "x\u{e9}\u{1f600}\ny"), ev(None, "z\nw")]
                .into_iter()
                .chain([ev(None, "last")])
                .collect::<Vec<_>>()
        );
        for i in 0..=input.len() {
            for j in i..=input.len() {
                assert_eq!(
                    parse_split(input, 1 << 20, &[i, j]).0,
                    whole,
                    "splits {i} {j}"
                );
            }
        }
    }

    #[test]
    fn cr_at_chunk_end_pairs_with_lf_at_next_start() {
        // One CRLF split across chunks is one line end, not a blank line.
        let (events, _) = parse_split(b"data: a\r\ndata: b\r\n\r\n", 100, &[8]);
        assert_eq!(events, vec![ev(None, "a\nb")]);
        // A lone CR followed by a chunk starting with data is still a line end.
        let (events, _) = parse_split(b"data: a\rdata: b\r\r", 100, &[8]);
        assert_eq!(events, vec![ev(None, "a\nb")]);
    }

    #[test]
    fn fields_and_comments() {
        assert_eq!(parse(b"data\n\n"), vec![ev(None, "")]);
        assert_eq!(parse(b"data:\ndata:\n\n"), vec![ev(None, "\n")]);
        assert_eq!(
            parse(b"data:  two spaces\n\n"),
            vec![ev(None, " two spaces")]
        );
        assert_eq!(parse(b": only a comment\n\n"), vec![]);
        assert_eq!(parse(b"event: x\n\ndata: y\n\n"), vec![ev(None, "y")]);
        assert_eq!(
            parse(b"id: 1\nretry: 5\nfoo: bar\ndata: y\n\n"),
            vec![ev(None, "y")]
        );
        assert_eq!(
            parse(b"event: error\ndata: {}\n\n"),
            vec![ev(Some("error"), "{}")]
        );
    }

    #[test]
    fn pending_event_is_dispatched_at_end_of_input() {
        assert_eq!(parse(b"data: [DONE]"), vec![ev(None, "[DONE]")]);
        assert_eq!(parse(b"data: a\n"), vec![ev(None, "a")]);
    }

    #[test]
    fn bom_only_at_the_start() {
        assert_eq!(
            parse_split(b"\xef\xbb\xbfdata: a\n\n", 100, &[1, 2]).0,
            vec![ev(None, "a")]
        );
        assert_eq!(
            parse(b"data: a\n\n\xef\xbb\xbfdata: b\n\n"),
            vec![ev(None, "a")],
            "a BOM later is part of a field name"
        );
    }

    #[test]
    fn utf8_split_inside_a_character() {
        let input = "data: \u{1f600}\u{e9}\n\n".as_bytes();
        for i in 0..input.len() {
            assert_eq!(
                parse_split(input, 100, &[i]).0,
                vec![ev(None, "\u{1f600}\u{e9}")]
            );
        }
    }

    #[test]
    fn large_events_within_the_bound() {
        let big = "x".repeat(5 << 20);
        let input = format!("data: {big}\n\n");
        let (events, error) = parse_split(input.as_bytes(), 8 << 20, &[1000, 3 << 20]);
        assert_eq!(error, None);
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].1.len(), 5 << 20);
    }

    #[test]
    fn bounded_line_and_event() {
        let too_large = Some("an upstream event exceeds the max_event_bytes bound of 8 bytes");
        // An unterminated line past the bound.
        let (events, error) = parse_split(b"data: a\n\ndata: 0123456789", 8, &[]);
        assert_eq!(events, vec![ev(None, "a")]);
        assert_eq!(error.as_deref(), too_large);
        // Data lines adding up past the bound; later events are not parsed.
        let (events, error) = parse_split(b"data: 1234\ndata: 5678\n\ndata: b\n\n", 8, &[]);
        assert_eq!(events, vec![]);
        assert_eq!(error.as_deref(), too_large);
        // Exactly at the bound is fine: "1234\n567" is 8 bytes.
        let (events, error) = parse_split(b"data: 1234\ndata: 567\n\n", 8, &[]);
        assert_eq!(events, vec![ev(None, "1234\n567")]);
        assert_eq!(error, None);
        // An event's data and its partial next line count together.
        let (events, error) = parse_split(b"data: 1234\ndata: 5", 8, &[]);
        assert_eq!(events, vec![]);
        assert_eq!(error.as_deref(), too_large);
    }

    #[test]
    fn buffers_stay_within_the_bound_and_are_released_on_error() {
        let mut parser = SseParser::new(16);
        let mut events = 0;
        parser.feed(b"event: e\ndata: 12345", |_, _| events += 1);
        assert_eq!(parser.buffered_bytes(), 1 + 11);
        parser.feed(b"678", |_, _| events += 1);
        assert_eq!(parser.buffered_bytes(), 1 + 14);
        parser.feed(b"9\n", |_, _| events += 1);
        assert_eq!(parser.buffered_bytes(), 1 + 9);
        parser.feed(b"\n", |_, _| events += 1);
        assert_eq!(
            (parser.buffered_bytes(), events, parser.error()),
            (0, 1, None)
        );
        // Past the bound: the error, and the buffers released.
        parser.feed(b"data: 0123456789abcdef", |_, _| events += 1);
        assert!(parser.error().is_some());
        assert_eq!(parser.buffered_bytes(), 0);
    }

    #[test]
    fn lines_that_are_no_sse_field_stop_the_stream() {
        let not_sse = Some("the upstream sent bytes that are not an event stream");
        for body in [
            &b"<!DOCTYPE html>\n<html><body>502 Bad Gateway</body></html>\n"[..],
            b"upstream connect error or disconnect/reset before headers\n",
            b"{\"error\": {\"message\": \"x\"}}\n",
            b"\x00\x01\x02\xff\n",
            b"data: a\n\n\xef\xbb\xbfdata: b\n\n",
        ] {
            let (_, error) = parse_split(body, 1 << 20, &[]);
            assert_eq!(error.as_deref(), not_sse, "{body:?}");
        }
        // Events before the garbage are delivered; unknown token fields are skipped.
        let (events, error) = parse_split(b"data: a\n\nfoo-bar_1: x\n<p>\ndata: b\n\n", 100, &[]);
        assert_eq!(events, vec![ev(None, "a")]);
        assert_eq!(error.as_deref(), not_sse);
        // Also in an unterminated last line.
        let (_, error) = parse_split(b"data: a\n\n<html>", 100, &[]);
        assert_eq!(error.as_deref(), not_sse);
    }

    #[test]
    fn in_event_tells_a_cut_inside_an_event() {
        let state = |input: &[u8]| {
            let mut parser = SseParser::new(100);
            parser.feed(input, |_, _| {});
            parser.in_event()
        };
        assert!(!state(b""));
        assert!(!state(b"data: a\n\n"));
        assert!(!state(b"data: a\n\n: keepal"));
        assert!(state(b"data: a\n\nda"));
        assert!(state(b"data: {\"a\""));
        assert!(state(b"data: a\n"));
        assert!(state(b"event: x\n"));
        assert!(!state(b"id: 4\n"));
    }
}
