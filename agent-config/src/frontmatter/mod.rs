//! Markdown with YAML frontmatter, as agent files and skills are written:
//! an opening `---` line, YAML, a closing `---` line, then the body.
//!
//! Invariants: the frontmatter always starts on line 2 of the file (line 1
//! is the opening fence; a leading byte-order mark is dropped); every line
//! number reported is a line of the whole file; text that does not start
//! with a fence has no frontmatter (its body is all of it); a frontmatter
//! must be a mapping with string keys, and `Mapping` knows the line of
//! every key path in it (`model`, `agents[1]`, `metadata.version`).

pub mod yaml;

use std::collections::HashMap;

use serde_json::{Map, Value};

pub(crate) use yaml::Located;

use crate::json::type_name;

/// The frontmatter's fence.
const FENCE: &str = "---";

/// The file line the frontmatter's first line is on (after the opening
/// fence); also the line reported for a key that is not there.
pub(crate) const FIRST_LINE: usize = 2;

/// Why a text is not a frontmatter and a body.
#[derive(Debug)]
pub(crate) enum FrontmatterError {
    /// The frontmatter opened on line 1 is never closed.
    Unclosed,
    /// The frontmatter is not YAML.
    Syntax {
        /// 1-based line in the file.
        line: usize,
        /// 1-based column.
        column: usize,
        /// The parser's message.
        message: String,
    },
    /// YAML this format cannot use (an alias, a non-string key, a root that
    /// is not a mapping): key path (`(frontmatter)` for the whole), line,
    /// message.
    Value(Located),
}

/// What [`FrontmatterError::Unclosed`] means, in words.
pub(crate) const UNCLOSED: &str = "the frontmatter opened on line 1 is never closed with a `---` line";

/// The key path naming the frontmatter as a whole in messages.
pub(crate) const WHOLE: &str = "(frontmatter)";

/// A document split into its frontmatter (`None` when it has none) and body.
pub(crate) struct Document<'t> {
    /// The frontmatter's mapping.
    pub frontmatter: Option<Mapping>,
    /// Everything after the closing fence (the whole text without one).
    pub body: &'t str,
}

/// Split `text` and parse its frontmatter.
pub(crate) fn parse(text: &str) -> Result<Document<'_>, FrontmatterError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    match lines.next() {
        Some(first) if first.trim_end() == FENCE => {}
        _ => {
            return Ok(Document {
                frontmatter: None,
                body: text,
            });
        }
    }
    let start = text.find('\n').map_or(text.len(), |i| i + 1);
    let mut offset = start;
    for line in lines {
        if line.trim_end() == FENCE {
            let mapping = Mapping::parse(&text[start..offset])?;
            return Ok(Document {
                frontmatter: Some(mapping),
                body: &text[offset + line.len()..],
            });
        }
        offset += line.len();
    }
    Err(FrontmatterError::Unclosed)
}

/// A frontmatter's mapping, with the line of each key path, and typed
/// reading whose errors name the key path and its line.
pub(crate) struct Mapping {
    root: Map<String, Value>,
    lines: HashMap<String, usize>,
}

impl Mapping {
    fn parse(yaml: &str) -> Result<Self, FrontmatterError> {
        let parsed = yaml::parse(yaml, FIRST_LINE).map_err(|e| match e {
            yaml::YamlError::Syntax {
                line,
                column,
                message,
            } => FrontmatterError::Syntax {
                line,
                column,
                message,
            },
            yaml::YamlError::Value((key, line, message)) => {
                let key = if key.is_empty() { WHOLE.to_owned() } else { key };
                FrontmatterError::Value((key, line, message))
            }
        })?;
        let root = match parsed.value {
            Value::Object(map) => map,
            Value::Null => Map::new(),
            other => {
                return Err(FrontmatterError::Value((
                    WHOLE.to_owned(),
                    FIRST_LINE,
                    format!("expected a mapping of keys, got {}", type_name(&other)),
                )));
            }
        };
        Ok(Self {
            root,
            lines: parsed.lines,
        })
    }

    /// The top-level mapping.
    pub fn root(&self) -> &Map<String, Value> {
        &self.root
    }

    /// The line of a key path ([`FIRST_LINE`] for one that is not there).
    pub fn line(&self, key: &str) -> usize {
        self.lines.get(key).copied().unwrap_or(FIRST_LINE)
    }

    /// An error about `key`, at its line.
    pub fn invalid(&self, key: &str, message: impl Into<String>) -> Located {
        (key.to_owned(), self.line(key), message.into())
    }

    /// The first key of `map` (at key path `prefix`) that is not `known`:
    /// its key path and line.
    pub fn unknown(&self, map: &Map<String, Value>, prefix: &str, known: &[&str]) -> Option<(String, usize)> {
        map.keys().find(|k| !known.contains(&k.as_str())).map(|key| {
            let key = if prefix.is_empty() {
                key.clone()
            } else {
                format!("{prefix}.{key}")
            };
            let line = self.line(&key);
            (key, line)
        })
    }

    /// A top-level value that is there and not null.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.root.get(key).filter(|v| !v.is_null())
    }

    /// A top-level string.
    pub fn string(&self, key: &str) -> Result<Option<String>, Located> {
        self.get(key)
            .map(|v| match v {
                Value::String(s) => Ok(s.clone()),
                other => Err(self.invalid(key, format!("expected a string, got {}", type_name(other)))),
            })
            .transpose()
    }

    /// A top-level list of strings.
    #[cfg(feature = "files")]
    pub fn strings(&self, key: &str) -> Result<Option<Vec<String>>, Located> {
        let Some(value) = self.get(key) else {
            return Ok(None);
        };
        let Value::Array(items) = value else {
            return Err(self.invalid(
                key,
                format!("expected a list of strings, got {}", type_name(value)),
            ));
        };
        items
            .iter()
            .enumerate()
            .map(|(i, item)| match item {
                Value::String(s) => Ok(s.clone()),
                other => Err(self.invalid(
                    &format!("{key}[{i}]"),
                    format!("expected a string, got {}", type_name(other)),
                )),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::*;

    #[test]
    fn a_document_splits_into_frontmatter_and_body() {
        let doc = parse("\u{feff}---\nname: a\nlist: [x, 2]\n---\nBody\n").unwrap();
        let fm = doc.frontmatter.unwrap();
        assert_eq!(doc.body, "Body\n");
        assert_eq!(
            (fm.string("name").unwrap().as_deref(), fm.line("list")),
            (Some("a"), 3)
        );
        assert_eq!(
            fm.string("list").unwrap_err(),
            ("list".into(), 3, "expected a string, got an array".into())
        );
        assert_eq!(fm.unknown(fm.root(), "", &["name"]), Some(("list".into(), 3)));

        let plain = parse("No fence\n---\n").unwrap();
        assert!(plain.frontmatter.is_none());
        assert_eq!(plain.body, "No fence\n---\n");
        assert!(matches!(parse("---\nname: a\n"), Err(FrontmatterError::Unclosed)));
        match parse("---\n- a\n---\n") {
            Err(FrontmatterError::Value((key, line, message))) => {
                assert_eq!((key.as_str(), line), (WHOLE, 2));
                assert!(message.contains("an array"), "{message}");
            }
            _ => panic!("a list is not a mapping"),
        }
    }
}
