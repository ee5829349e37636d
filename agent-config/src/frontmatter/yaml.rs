//! The frontmatter's YAML as JSON, with the line of every key.
//!
//! Invariant: each key path of the result (`model`, `agents[1]`,
//! `reasoning.effort`) has the 1-based line, in the whole file, where its
//! key (for a mapping entry) or its item (for a sequence item) starts.

use std::collections::HashMap;

use saphyr::{LoadableYamlNode, MarkedYaml, Scalar, YamlData};
use serde_json::{Map, Number, Value};

/// What went wrong, where: (key path, line, message).
pub type Located = (String, usize, String);

/// The frontmatter as a JSON value and the lines of its key paths.
pub struct Frontmatter {
    pub value: Value,
    pub lines: HashMap<String, usize>,
}

/// Parse `text`, whose first line is line `first_line` of the file.
/// `Err((line, column, message))` for a syntax error.
pub fn parse(text: &str, first_line: usize) -> Result<Frontmatter, YamlError> {
    let docs = MarkedYaml::load_from_str(text).map_err(|e| YamlError::Syntax {
        line: e.marker().line() + first_line - 1,
        column: e.marker().col() + 1,
        message: e.info().to_owned(),
    })?;
    let mut lines = HashMap::new();
    let value = match docs.as_slice() {
        [] => Value::Object(Map::new()),
        [doc] => to_json(doc, "", first_line, &mut lines).map_err(YamlError::Value)?,
        [_, second, ..] => {
            return Err(YamlError::Value((
                String::new(),
                second.span.start.line() + first_line - 1,
                "more than one YAML document in the frontmatter".into(),
            )));
        }
    };
    Ok(Frontmatter { value, lines })
}

/// Why the frontmatter is not usable YAML.
#[derive(Debug)]
pub enum YamlError {
    /// Not YAML.
    Syntax {
        line: usize,
        column: usize,
        message: String,
    },
    /// YAML this format cannot use (an alias, a non-string key, ...).
    Value(Located),
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

fn to_json(
    node: &MarkedYaml<'_>,
    path: &str,
    first_line: usize,
    lines: &mut HashMap<String, usize>,
) -> Result<Value, Located> {
    let line = |n: &MarkedYaml<'_>| n.span.start.line() + first_line - 1;
    let at = |message: &str| (path.to_owned(), line(node), message.to_owned());
    Ok(match &node.data {
        YamlData::Value(scalar) => match scalar {
            Scalar::Null => Value::Null,
            Scalar::Boolean(b) => Value::Bool(*b),
            Scalar::Integer(i) => Value::Number((*i).into()),
            Scalar::FloatingPoint(f) => Number::from_f64(f.into_inner())
                .map(Value::Number)
                .ok_or_else(|| at("a number must be finite"))?,
            Scalar::String(s) => Value::String(s.to_string()),
        },
        YamlData::Representation(text, _, _) => Value::String(text.to_string()),
        YamlData::Sequence(items) => {
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                let item_path = format!("{path}[{i}]");
                lines.insert(item_path.clone(), line(item));
                out.push(to_json(item, &item_path, first_line, lines)?);
            }
            Value::Array(out)
        }
        YamlData::Mapping(entries) => {
            let mut out = Map::new();
            for (key, value) in entries {
                let name = match &key.data {
                    YamlData::Value(Scalar::String(s)) => s.to_string(),
                    _ => return Err((path.to_owned(), line(key), "keys must be strings".into())),
                };
                let key_path = join(path, &name);
                lines.insert(key_path.clone(), line(key));
                let value = to_json(value, &key_path, first_line, lines)?;
                out.insert(name, value);
            }
            Value::Object(out)
        }
        YamlData::Tagged(_, inner) => to_json(inner, path, first_line, lines)?,
        YamlData::Alias(_) => return Err(at("anchors and aliases are not supported")),
        YamlData::BadValue => return Err(at("not a YAML value")),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::*;

    #[test]
    fn values_and_the_lines_of_their_keys() {
        let text = "name: a\nagents:\n  - b.md\n  - c.md\nreasoning:\n  effort: high\nmaxSteps: 3\nt: 0.5\n";
        let fm = parse(text, 2).unwrap();
        assert_eq!(
            fm.value,
            serde_json::json!({"name": "a", "agents": ["b.md", "c.md"], "reasoning": {"effort": "high"}, "maxSteps": 3, "t": 0.5})
        );
        let line = |k: &str| fm.lines[k];
        assert_eq!(
            (
                line("name"),
                line("agents[1]"),
                line("reasoning.effort"),
                line("maxSteps")
            ),
            (2, 5, 7, 8)
        );
    }

    #[test]
    fn syntax_errors_and_unusable_yaml_say_where() {
        match parse("a: [1, 2\nb: 3\n", 2) {
            Err(YamlError::Syntax { line, .. }) => assert!(line >= 2, "{line}"),
            _ => panic!("a syntax error"),
        }
        // Anchors and aliases are resolved by the loader.
        let fm = parse("a: &x 1\nb: *x\n", 2).unwrap();
        assert_eq!(fm.value, serde_json::json!({"a": 1, "b": 1}));
    }
}
