//! The item limit: how many messages (input items, on the Responses API),
//! content parts and JSON values one request may hold, and how large a
//! conversation a run may start with.
//!
//! Invariants:
//! - a body's items, parts and values are counted before anything is built
//!   from them ([`count`] reads the body once more without keeping a
//!   value), so a body of a few bytes per item or value is refused before
//!   it becomes tens or hundreds of bytes per item or value in memory; the
//!   values of function calls' arguments, which the Responses API parses
//!   from strings, count too ([`values_in`]). A request within the limits
//!   takes at most the body limit plus [`BYTES_PER_VALUE`] for each of
//!   its [`VALUES_PER_ITEM`] × item limit values, once parsed;
//! - the conversation a run starts with, a continued one included (a
//!   session's stored turns, a response's chain), holds at most the item
//!   limit's messages and at most the body limit's bytes of JSON: a
//!   conversation the server continues for a client is bounded as one the
//!   client sends whole ([`check_conversation`]); every stored turn comes
//!   from such a run, so a stored conversation never grows beyond the
//!   limits by more than one run's answer.

use std::fmt;

use loopwright_core::Message;
use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

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

/// JSON values a body may hold for each item of the item limit, counted
/// by what they cost once parsed: an object weighs 8, an
/// array 2, a key, a string, a number, a boolean or a null
/// one. A message weighs 12 to 40 (`{"type": "message", "role": "user",
/// "content": [{"type": "input_text", "text": "..."}]}` is 27), so a
/// conversation at the item limit fits, while a body of tiny values does
/// not: each costs 40 to 90 bytes once parsed for 2 to 8 in the body (a
/// one-key object, 675 bytes for 8).
///
/// ```
/// // The default limits take 320,000 values a request.
/// assert_eq!(loopwright_serve::VALUES_PER_ITEM * loopwright_serve::DEFAULT_ITEM_LIMIT, 320_000);
/// ```
pub const VALUES_PER_ITEM: usize = 32;

/// What an object weighs in the count of values, besides its keys and
/// values: a parsed object (a B-tree's first node) costs about as much as
/// eight numbers.
pub(crate) const OBJECT_WEIGHT: usize = 8;

/// What an array weighs in the count of values, besides its elements.
pub(crate) const ARRAY_WEIGHT: usize = 2;

/// The most one counted value costs once parsed, in bytes (measured for
/// the costliest shapes: one-key objects about 68 a unit, one-element
/// arrays 57, numbers 42; a typed message about 20): what the memory bound
/// of the serve README counts with.
///
/// ```
/// use loopwright_serve::{BYTES_PER_VALUE, DEFAULT_BODY_LIMIT, DEFAULT_ITEM_LIMIT, VALUES_PER_ITEM};
/// // One conversation at the default limits, parsed: at most about 31 MB.
/// let parsed = DEFAULT_BODY_LIMIT + BYTES_PER_VALUE * VALUES_PER_ITEM * DEFAULT_ITEM_LIMIT;
/// assert_eq!(parsed, 31_428_608);
/// ```
pub const BYTES_PER_VALUE: usize = 72;

/// What [`count`] found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Count {
    /// Elements of the field's array.
    pub(crate) items: usize,
    /// Elements of their `content` and `output` arrays, in all.
    pub(crate) parts: usize,
    /// JSON values in the whole body, object keys included, objects and
    /// arrays weighed ([`VALUES_PER_ITEM`]).
    pub(crate) values: usize,
}

/// Counts the elements of the array `field` of the JSON object `body`, the
/// elements of each one's `content` and `output` arrays, and every JSON
/// value of the body, building nothing. A body that is not a JSON object
/// is an error (the request's own parse then says what is wrong with it).
pub(crate) fn count(body: &[u8], field: &str) -> Result<Count, serde_json::Error> {
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    Walk(Level::Top(field)).deserialize(&mut deserializer)
}

/// Counts the JSON values of `text` (a function call's arguments, parsed
/// into a value of their own), building nothing.
pub(crate) fn values_in(text: &str) -> Result<usize, serde_json::Error> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let found = Walk(Level::Other).deserialize(&mut deserializer)?;
    deserializer.end()?;
    Ok(found.values)
}

/// Refuses a body whose `field` holds more than `limits.items` items, or
/// as many content parts in all (`what` names the items: "messages",
/// "input items"), or more than [`VALUES_PER_ITEM`] times as many JSON
/// values: a 400 in `shape` naming the count and the limit. Returns how
/// many more JSON values the request may bring (in strings it parses,
/// as function calls' arguments).
pub(crate) fn check_body(
    body: &[u8],
    field: &str,
    what: &str,
    limits: Limits,
    shape: Shape,
) -> Result<usize, ApiError> {
    let values = limits.items.saturating_mul(VALUES_PER_ITEM);
    // A body that does not parse is refused by the request's own parse,
    // which names what is wrong with it.
    let Ok(found) = count(body, field) else {
        return Ok(values);
    };
    let refuse = |message: String| Err(ApiError::new(shape, Kind::BadRequest, message));
    if found.items > limits.items || found.parts > limits.items {
        let (n, what) = if found.items > limits.items {
            (found.items, what)
        } else {
            (found.parts, "content parts in all")
        };
        return refuse(format!(
            "`{field}` has {n} {what}: this server takes at most {} a request (its item limit); send fewer",
            limits.items
        ));
    }
    if found.values > values {
        return refuse(format!(
            "the request body has {} JSON values (objects, arrays, keys, strings, numbers): this server takes at \
             most {values} a request ({VALUES_PER_ITEM} per item of its item limit of {}); send fewer",
            found.values, limits.items
        ));
    }
    Ok(values - found.values)
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

/// Where in the body a value is.
#[derive(Clone, Copy)]
enum Level<'a> {
    /// The body: an object whose `field` holds the items.
    Top(&'a str),
    /// The items' field: an array's elements are items.
    Field,
    /// An item: its `content` and `output` arrays hold parts.
    Item,
    /// An item's `content` or `output`: an array's elements are parts.
    Parts,
    /// Anything else: its values are counted.
    Other,
}

/// Counts a value and everything in it, as [`Level`] says.
struct Walk<'a>(Level<'a>);

impl<'de> DeserializeSeed<'de> for Walk<'_> {
    type Value = Count;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Count, D::Error> {
        match self.0 {
            Level::Top(_) => deserializer.deserialize_map(self),
            _ => deserializer.deserialize_any(self),
        }
    }
}

impl Count {
    fn one() -> Self {
        Self {
            values: 1,
            ..Self::default()
        }
    }

    fn add(&mut self, other: Count) {
        self.items += other.items;
        self.parts += other.parts;
        self.values += other.values;
    }
}

impl<'de> Visitor<'de> for Walk<'_> {
    type Value = Count;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Count, A::Error> {
        let mut found = Count {
            values: OBJECT_WEIGHT,
            ..Count::default()
        };
        let names: &[&str] = match self.0 {
            Level::Top(field) => &[field][..],
            Level::Item => &["content", "output"],
            _ => &[],
        };
        while let Some(matched) = map.next_key_seed(KeyIs(names))? {
            // The key is a value too (a string in a parsed object).
            found.values += 1;
            let level = match (self.0, matched) {
                (Level::Top(_), Some(_)) => Level::Field,
                (Level::Item, Some(_)) => Level::Parts,
                _ => Level::Other,
            };
            found.add(map.next_value_seed(Walk(level))?);
        }
        Ok(found)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Count, A::Error> {
        let mut found = Count {
            values: ARRAY_WEIGHT,
            ..Count::default()
        };
        let (element, counted) = match self.0 {
            Level::Field => (Level::Item, true),
            Level::Parts => (Level::Other, true),
            _ => (Level::Other, false),
        };
        while let Some(inner) = seq.next_element_seed(Walk(element))? {
            found.add(inner);
            match self.0 {
                Level::Field if counted => found.items += 1,
                Level::Parts if counted => found.parts += 1,
                _ => {}
            }
        }
        Ok(found)
    }

    fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<Count, E> {
        Ok(Count::one())
    }

    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<Count, E> {
        Ok(Count::one())
    }

    fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<Count, E> {
        Ok(Count::one())
    }

    fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<Count, E> {
        Ok(Count::one())
    }

    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<Count, E> {
        Ok(Count::one())
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Count, E> {
        Ok(Count::one())
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
        let found = count(body, "messages").unwrap();
        assert_eq!((found.items, found.parts), (5, 3));
        let found = count(body, "input").unwrap();
        assert_eq!((found.items, found.parts), (0, 0));
        // {"input": "just text"}: an object (8), a key, a string.
        let found = count(br#"{"input": "just text"}"#, "input").unwrap();
        assert_eq!((found.items, found.values), (0, 10));
        // Two objects (16), two arrays (4), three keys, four scalars.
        let found = count(br#"{"a": [1, [2, {"b": null}]], "c": true}"#, "x").unwrap();
        assert_eq!(found.values, 27);
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
        assert_eq!(
            check_body(b"not json", "messages", "messages", limits, Shape::Plain).unwrap(),
            64
        );
        assert_eq!(
            check_body(
                br#"{"messages": []}"#,
                "messages",
                "messages",
                limits,
                Shape::Plain
            )
            .unwrap(),
            53
        );
        assert_eq!(values_in("[1, {\"a\": 2}]").unwrap(), 13);
        assert!(values_in("[1] 2").is_err());
        // Two items, but a body of tiny values beyond 32 an item.
        let junk = format!(r#"{{"messages": [], "junk": [{}]}}"#, vec!["0"; 70].join(","));
        let e = check_body(junk.as_bytes(), "messages", "messages", limits, Shape::Plain).unwrap_err();
        assert!(
            e.message.contains("84 JSON values") && e.message.contains("at most 64"),
            "{}",
            e.message
        );
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
