//! The item limit: how many messages (input items, on the Responses API)
//! and content parts one request's conversation may hold, and how large a
//! conversation a run may start with.
//!
//! Invariants:
//! - a body's items are counted before anything is built from them
//!   ([`count`] reads the body once more without keeping a value), so a
//!   body of a few bytes per item is refused before it becomes hundreds of
//!   bytes per item in memory;
//! - the conversation a run starts with, a continued one included (a
//!   session's stored turns, a response's chain), holds at most the item
//!   limit's messages and at most the body limit's bytes of JSON: a
//!   conversation the server continues for a client is bounded as one the
//!   client sends whole ([`check_conversation`]); every stored turn comes
//!   from such a run, so a stored conversation never grows beyond the
//!   limits by more than one run's answer.

use std::fmt;

use loopwright_core::Message;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use crate::error::{ApiError, Kind, Shape};

/// Messages (input items) a request may hold, and content parts in all,
/// when not configured: far more than a long agent conversation (a few
/// hundred steps make a few thousand messages), few enough that a body of
/// tiny items costs a bounded amount once parsed (a message is a few
/// hundred bytes in memory however few bytes it took in the body).
pub const DEFAULT_ITEM_LIMIT: usize = 10_000;

/// The limits a request's conversation is held to.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// Messages (input items), and content parts in all, per request.
    pub(crate) items: usize,
    /// Bytes of a request body, and of a run's whole conversation as JSON.
    pub(crate) body: usize,
}

/// What [`count`] found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Count {
    /// Elements of the field's array.
    pub(crate) items: usize,
    /// Elements of their `content` and `output` arrays, in all.
    pub(crate) parts: usize,
}

/// Counts the elements of the array `field` of the JSON object `body`, and
/// the elements of each one's `content` and `output` arrays, building
/// nothing. A body that is not a JSON object is an error (the request's
/// own parse then says what is wrong with it).
pub(crate) fn count(body: &[u8], field: &str) -> Result<Count, serde_json::Error> {
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    Top { field }.deserialize(&mut deserializer)
}

/// Refuses a body whose `field` holds more than `limits.items` items, or
/// as many content parts in all (`what` names the items: "messages",
/// "input items"): a 400 in `shape` naming the count and the limit.
pub(crate) fn check_body(
    body: &[u8],
    field: &str,
    what: &str,
    limits: Limits,
    shape: Shape,
) -> Result<(), ApiError> {
    // A body that does not parse is refused by the request's own parse,
    // which names what is wrong with it.
    let Ok(found) = count(body, field) else {
        return Ok(());
    };
    let over = if found.items > limits.items {
        Some((found.items, what))
    } else if found.parts > limits.items {
        Some((found.parts, "content parts in all"))
    } else {
        None
    };
    match over {
        Some((n, what)) => Err(ApiError::new(
            shape,
            Kind::BadRequest,
            format!(
                "`{field}` has {n} {what}: this server takes at most {} a request (its item limit); send \
                 fewer",
                limits.items
            ),
        )),
        None => Ok(()),
    }
}

/// Refuses a run whose whole conversation (`stored` messages of a
/// continued conversation, named by `whose`, then the request's `input`)
/// holds more than the item limit's messages or the body limit's bytes of
/// JSON: a 400 in `shape` naming both counts and the limit.
pub(crate) fn check_conversation(
    stored: &[Message],
    input: &[Message],
    whose: &str,
    limits: Limits,
    shape: Shape,
) -> Result<(), ApiError> {
    if stored.is_empty() {
        return Ok(());
    }
    let messages = stored.len() + input.len();
    if messages > limits.items {
        return Err(ApiError::new(
            shape,
            Kind::BadRequest,
            format!(
                "{whose} holds {} messages and this request adds {}: {messages} in all, over this server's \
                 item limit of {}; start a new conversation",
                stored.len(),
                input.len(),
                limits.items
            ),
        ));
    }
    let bytes = json_len(stored) + json_len(input);
    if bytes > limits.body {
        return Err(ApiError::new(
            shape,
            Kind::BadRequest,
            format!(
                "{whose} and this request make a conversation of {bytes} bytes (as JSON), over this server's \
                 body limit of {} bytes, which a continued conversation is held to as one sent whole; start a \
                 new conversation",
                limits.body
            ),
        ));
    }
    Ok(())
}

/// The length of `messages` as JSON, counted without writing it.
pub(crate) fn json_len(messages: &[Message]) -> usize {
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    // Messages are plain data and always serialise; were one not to, the
    // count would be short and the store's own write would fail naming it.
    if let Err(e) = serde_json::to_writer(&mut counter, messages) {
        tracing::debug!(error = %e, "a conversation did not serialise while it was measured");
    }
    counter.0
}

/// The top-level object: counts `field`, skips the rest.
struct Top<'a> {
    field: &'a str,
}

impl<'de> DeserializeSeed<'de> for Top<'_> {
    type Value = Count;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Count, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Top<'_> {
    type Value = Count;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Count, A::Error> {
        let mut found = Count::default();
        while let Some(matched) = map.next_key_seed(KeyIs(&[self.field]))? {
            if matched.is_some() {
                found = map.next_value_seed(Items)?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }
}

/// A map key compared with `names`: the index of the one it is.
struct KeyIs<'a>(&'a [&'a str]);

impl<'de> DeserializeSeed<'de> for KeyIs<'_> {
    type Value = Option<usize>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Option<usize>, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeyIs<'_> {
    type Value = Option<usize>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a key")
    }

    fn visit_str<E: serde::de::Error>(self, key: &str) -> Result<Option<usize>, E> {
        Ok(self.0.iter().position(|name| *name == key))
    }
}

/// The field's value: an array's elements and their parts are counted;
/// anything else counts nothing.
struct Items;

impl<'de> DeserializeSeed<'de> for Items {
    type Value = Count;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Count, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Items {
    type Value = Count;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Count, A::Error> {
        let mut found = Count::default();
        while let Some(parts) = seq.next_element_seed(Parts::Item)? {
            found.items += 1;
            found.parts += parts;
        }
        Ok(found)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Count, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Count::default())
    }

    fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<Count, E> {
        Ok(Count::default())
    }

    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<Count, E> {
        Ok(Count::default())
    }

    fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<Count, E> {
        Ok(Count::default())
    }

    fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<Count, E> {
        Ok(Count::default())
    }

    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<Count, E> {
        Ok(Count::default())
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Count, E> {
        Ok(Count::default())
    }
}

/// An item (its `content` and `output` arrays' elements counted) or one
/// of those arrays (its elements counted).
#[derive(Clone, Copy)]
enum Parts {
    Item,
    List,
}

impl<'de> DeserializeSeed<'de> for Parts {
    type Value = usize;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<usize, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Parts {
    type Value = usize;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<usize, A::Error> {
        let mut parts = 0;
        if matches!(self, Parts::List) {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            return Ok(0);
        }
        while let Some(matched) = map.next_key_seed(KeyIs(&["content", "output"]))? {
            if matched.is_some() {
                parts += map.next_value_seed(Parts::List)?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(parts)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<usize, A::Error> {
        let mut n = 0;
        while seq.next_element::<IgnoredAny>()?.is_some() {
            n += 1;
        }
        // An item that is itself an array is no message: its elements are
        // not parts.
        Ok(if matches!(self, Parts::List) { n } else { 0 })
    }

    fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<usize, E> {
        Ok(0)
    }

    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<usize, E> {
        Ok(0)
    }

    fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<usize, E> {
        Ok(0)
    }

    fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<usize, E> {
        Ok(0)
    }

    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<usize, E> {
        Ok(0)
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<usize, E> {
        Ok(0)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn items_and_their_parts_are_counted_and_the_rest_skipped() {
        let body = br#"{"model": "m", "messages": [
            {"role": "user", "content": "hi"},
            {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
            {"type": "function_call_output", "output": [{"type": "input_text", "text": "c"}]},
            [1, 2], 7
        ], "other": {"messages": [1, 2, 3]}}"#;
        assert_eq!(count(body, "messages").unwrap(), Count { items: 5, parts: 3 });
        assert_eq!(count(body, "input").unwrap(), Count::default());
        assert_eq!(
            count(br#"{"input": "just text"}"#, "input").unwrap(),
            Count::default()
        );
        assert!(count(b"[1, 2]", "input").is_err());
        assert!(count(b"{\"input\": [", "input").is_err());
    }

    #[test]
    fn a_body_over_the_limit_is_refused_naming_the_count_and_the_limit() {
        let limits = Limits { items: 2, body: 1000 };
        let body = br#"{"input": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"},
            {"role": "user", "content": "c"}]}"#;
        let e = check_body(body, "input", "input items", limits, Shape::OpenAi).unwrap_err();
        assert_eq!(e.status(), 400);
        assert!(
            e.message.contains("3 input items") && e.message.contains("at most 2"),
            "{}",
            e.message
        );
        let parts = br#"{"messages": [{"role": "user", "content": [{"type": "text", "text": "a"},
            {"type": "text", "text": "b"}, {"type": "text", "text": "c"}]}]}"#;
        let e = check_body(parts, "messages", "messages", limits, Shape::Plain).unwrap_err();
        assert!(e.message.contains("3 content parts"), "{}", e.message);
        assert!(check_body(b"not json", "messages", "messages", limits, Shape::Plain).is_ok());
    }

    #[test]
    fn a_continued_conversation_is_held_to_the_limits_of_one_sent_whole() {
        let limits = Limits { items: 3, body: 200 };
        let stored = vec![Message::user("a"), Message::assistant("b")];
        let input = vec![Message::user("c")];
        assert!(check_conversation(&stored, &input, "session s", limits, Shape::Plain).is_ok());
        let more = vec![Message::user("c"), Message::user("d")];
        let e = check_conversation(&stored, &more, "session s", limits, Shape::Plain).unwrap_err();
        assert!(
            e.message.contains("session s holds 2 messages") && e.message.contains("4 in all"),
            "{}",
            e.message
        );
        let long = vec![Message::user("x".repeat(300))];
        let e = check_conversation(&stored, &long, "session s", limits, Shape::Plain).unwrap_err();
        assert!(e.message.contains("body limit of 200 bytes"), "{}", e.message);
        assert_eq!(json_len(&input), serde_json::to_vec(&input).unwrap().len());
    }
}
