//! Eval datasets: a YAML or JSON file of [`Case`]s, each a prompt (or a
//! conversation), variables, and [`Expectation`]s.
//!
//! Invariant: a dataset that loads is usable as it is: every regex
//! compiles, every schema is a JSON Schema, every case has a prompt or
//! messages and at least one expectation; anything else is an error naming
//! the file, the key path (`cases[2].expect[0].regex`) and its line. The
//! file is read only when it is a regular file (a FIFO or a device such as
//! `/dev/zero` is refused on the opened handle) of at most
//! [`MAX_DATASET_BYTES`].

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use loopwright_core::{ContentPart, Message, OutputSpec, Role};
use serde_json::{Map, Value};

use super::expect::{Expectation, ToolExpectation};
use loopwright_config::frontmatter::yaml;
use loopwright_config::json::type_name;

/// The largest dataset file read: thousands of cases with long prompts
/// fit; a larger file is refused (naming it and this limit) rather than
/// parsed into memory.
///
/// ```
/// assert_eq!(loopwright_evals::MAX_DATASET_BYTES, 16 * 1024 * 1024);
/// ```
pub const MAX_DATASET_BYTES: u64 = 16 * 1024 * 1024;

/// The keys of a dataset file.
const DATASET_KEYS: [&str; 2] = ["judge", "cases"];
/// The keys of a case.
const CASE_KEYS: [&str; 5] = ["name", "prompt", "messages", "vars", "expect"];

/// Why a dataset file could not be used.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("cases.yaml");
/// std::fs::write(&path, "cases:\n  - prompt: hi\n    expect:\n      - regex: \"(unclosed\"\n").unwrap();
/// let err = loopwright_evals::Dataset::load(&path).unwrap_err();
/// assert!(err.to_string().ends_with("cases.yaml:4: cases[0].expect[0].regex: not a regular expression: regex parse error:\n    (unclosed\n    ^\nerror: unclosed group"), "{err}");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DatasetError {
    /// The file could not be read.
    #[error("{}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The file is not YAML (nor JSON).
    #[error("{}:{line}:{column}: invalid YAML: {message}", path.display())]
    Syntax {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// The parser's message.
        message: String,
    },
    /// A value is missing, of the wrong type, or unusable.
    #[error("{}:{line}: {key}: {message}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// The key path (`cases[0].expect[1].tool_called`).
        key: String,
        /// Its line.
        line: usize,
        /// What is wrong.
        message: String,
    },
}

/// One case: what the agent is asked and what its answer must satisfy.
///
/// ```
/// let case = loopwright_evals::Case::new("capital", "Capital of France?")
///     .expect(loopwright_evals::Expectation::contains("Paris"));
/// assert_eq!(case.messages()[0].text(), "Capital of France?");
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Case {
    /// The case's name (`case N` when the file gives none).
    pub name: String,
    /// The conversation sent: the prompt as one user message, or the
    /// messages given (`${NAME}` replaced by the case's variables).
    pub messages: Vec<Message>,
    /// The case's variables (also the agent file's prompt variables).
    pub vars: BTreeMap<String, String>,
    /// What must hold.
    pub expectations: Vec<Expectation>,
}

impl Case {
    /// A case asking `prompt`, with no expectation yet.
    pub fn new(name: impl Into<String>, prompt: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            messages: vec![Message::user(prompt)],
            vars: BTreeMap::new(),
            expectations: Vec::new(),
        }
    }

    /// The same case with one more expectation.
    pub fn expect(mut self, expectation: Expectation) -> Self {
        self.expectations.push(expectation);
        self
    }

    /// The same case with a variable (`${NAME}` in its messages is replaced
    /// when the case is run).
    ///
    /// ```
    /// let case = loopwright_evals::Case::new("c", "Capital of ${COUNTRY}?").var("COUNTRY", "Peru");
    /// assert_eq!(case.messages()[0].text(), "Capital of Peru?");
    /// ```
    pub fn var(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.vars.insert(name.into(), value.into());
        self
    }

    /// The messages with the variables replaced.
    pub fn messages(&self) -> Vec<Message> {
        self.messages
            .iter()
            .map(|m| {
                let content = m
                    .content
                    .iter()
                    .map(|p| match p {
                        ContentPart::Text { text } => ContentPart::text(expand(text, &self.vars)),
                        other => other.clone(),
                    })
                    .collect();
                Message::new(m.role, content)
            })
            .collect()
    }

    /// Whether an expectation needs the judge.
    pub fn needs_judge(&self) -> bool {
        self.expectations.iter().any(Expectation::needs_judge)
    }
}

/// `${NAME}` replaced by `vars[NAME]`; other text as is.
fn expand(text: &str, vars: &BTreeMap<String, String>) -> String {
    let mut out = text.to_owned();
    for (name, value) in vars {
        out = out.replace(&format!("${{{name}}}"), value);
    }
    out
}

/// A set of cases.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("cases.yaml");
/// std::fs::write(&path, r#"
/// judge: local/judge
/// cases:
///   - name: capital
///     prompt: "Capital of ${COUNTRY}?"
///     vars: {COUNTRY: France}
///     expect:
///       - contains: Paris
///       - tool_not_called: Bash
///       - max_steps: 2
///       - rubric: Names Paris and nothing else.
/// "#).unwrap();
/// let dataset = loopwright_evals::Dataset::load(&path).unwrap();
/// assert_eq!(dataset.judge.as_deref(), Some("local/judge"));
/// assert_eq!(dataset.cases[0].messages()[0].text(), "Capital of France?");
/// assert_eq!(dataset.cases[0].expectations.len(), 4);
/// ```
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Dataset {
    /// The judge model (`provider/model`) for rubric expectations, when
    /// the file names one.
    pub judge: Option<String>,
    /// The cases, in file order.
    pub cases: Vec<Case>,
}

impl Dataset {
    /// A dataset of these cases.
    pub fn new(cases: Vec<Case>) -> Self {
        Self { judge: None, cases }
    }

    /// Read a dataset file: YAML, or JSON (which is YAML too); a regular
    /// file of at most [`MAX_DATASET_BYTES`] (a FIFO or a device is refused
    /// before a byte is read).
    pub fn load(path: &Path) -> Result<Self, DatasetError> {
        let text = loopwright_core::named_file::read_text(path, MAX_DATASET_BYTES).map_err(|source| {
            DatasetError::Read {
                path: path.to_path_buf(),
                source,
            }
        })?;
        Self::parse(&text, path)
    }

    /// Parse a dataset's text; `path` names it in errors.
    ///
    /// ```
    /// let err = loopwright_evals::Dataset::parse("cases:\n  - prompt: hi\n", "d.yaml".as_ref()).unwrap_err();
    /// assert_eq!(err.to_string(), "d.yaml:2: cases[0].expect: a case needs at least one expectation");
    /// ```
    pub fn parse(text: &str, path: &Path) -> Result<Self, DatasetError> {
        let parsed = yaml::parse(text, 1).map_err(|e| match e {
            yaml::YamlError::Syntax {
                line,
                column,
                message,
            } => DatasetError::Syntax {
                path: path.to_path_buf(),
                line,
                column,
                message,
            },
            yaml::YamlError::Value((key, line, message)) => DatasetError::Invalid {
                path: path.to_path_buf(),
                key: if key.is_empty() { "(file)".into() } else { key },
                line,
                message,
            },
        })?;
        let reader = Reader {
            path,
            lines: &parsed.lines,
        };
        reader.dataset(&parsed.value)
    }
}

/// Typed reading with errors naming the key path and its line.
struct Reader<'a> {
    path: &'a Path,
    lines: &'a HashMap<String, usize>,
}

type Res<T> = Result<T, DatasetError>;

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

impl Reader<'_> {
    /// The line of `key`, else of its nearest parent that has one.
    fn line(&self, key: &str) -> usize {
        let mut k = key;
        loop {
            if let Some(line) = self.lines.get(k) {
                return *line;
            }
            match k.rfind(['.', '[']) {
                Some(i) => k = &k[..i],
                None => return 1,
            }
        }
    }

    fn invalid(&self, key: &str, message: impl Into<String>) -> DatasetError {
        DatasetError::Invalid {
            path: self.path.to_path_buf(),
            key: if key.is_empty() {
                "(file)".into()
            } else {
                key.to_owned()
            },
            line: self.line(key),
            message: message.into(),
        }
    }

    fn object<'v>(&self, key: &str, value: &'v Value) -> Res<&'v Map<String, Value>> {
        value
            .as_object()
            .ok_or_else(|| self.invalid(key, format!("expected a mapping, got {}", type_name(value))))
    }

    fn string(&self, key: &str, value: &Value) -> Res<String> {
        match value {
            Value::String(s) => Ok(s.clone()),
            Value::Number(n) => Ok(n.to_string()),
            Value::Bool(b) => Ok(b.to_string()),
            other => Err(self.invalid(key, format!("expected a string, got {}", type_name(other)))),
        }
    }

    fn array<'v>(&self, key: &str, value: &'v Value) -> Res<&'v Vec<Value>> {
        value
            .as_array()
            .ok_or_else(|| self.invalid(key, format!("expected a list, got {}", type_name(value))))
    }

    fn only_known(&self, path: &str, map: &Map<String, Value>, known: &[&str]) -> Res<()> {
        match map.keys().find(|k| !known.contains(&k.as_str())) {
            Some(k) => Err(self.invalid(
                &join(path, k),
                format!("unknown key (known: {})", known.join(", ")),
            )),
            None => Ok(()),
        }
    }

    fn dataset(&self, value: &Value) -> Res<Dataset> {
        let root = match value {
            Value::Null => return Err(self.invalid("cases", "the file has no cases")),
            // A bare list of cases.
            Value::Array(_) => {
                return Ok(Dataset {
                    judge: None,
                    cases: self.cases("", value)?,
                });
            }
            other => self.object("", other)?,
        };
        self.only_known("", root, &DATASET_KEYS)?;
        let judge = root.get("judge").map(|v| self.string("judge", v)).transpose()?;
        let cases = match root.get("cases") {
            Some(cases) => self.cases("cases", cases)?,
            None => return Err(self.invalid("cases", "the file has no cases")),
        };
        Ok(Dataset { judge, cases })
    }

    fn cases(&self, key: &str, value: &Value) -> Res<Vec<Case>> {
        let items = self.array(key, value)?;
        if items.is_empty() {
            return Err(self.invalid(key, "the list of cases is empty"));
        }
        let mut names: HashMap<String, String> = HashMap::new();
        let mut cases = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let path = format!("{key}[{i}]");
            let case = self.case(&path, i, item)?;
            if let Some(first) = names.insert(case.name.clone(), path.clone()) {
                return Err(self.invalid(
                    &join(&path, "name"),
                    format!("`{}` is also the name of {first}", case.name),
                ));
            }
            cases.push(case);
        }
        Ok(cases)
    }

    fn case(&self, path: &str, index: usize, value: &Value) -> Res<Case> {
        let map = self.object(path, value)?;
        self.only_known(path, map, &CASE_KEYS)?;
        let name = match map.get("name") {
            Some(v) => self.string(&join(path, "name"), v)?,
            None => format!("case {}", index + 1),
        };
        let messages = match (map.get("prompt"), map.get("messages")) {
            (Some(_), Some(_)) => {
                return Err(self.invalid(
                    &join(path, "messages"),
                    "give either prompt or messages, not both",
                ));
            }
            (Some(p), None) => vec![Message::user(self.string(&join(path, "prompt"), p)?)],
            (None, Some(m)) => self.messages(&join(path, "messages"), m)?,
            (None, None) => return Err(self.invalid(path, "a case needs a prompt or messages")),
        };
        let mut vars = BTreeMap::new();
        if let Some(v) = map.get("vars") {
            let key = join(path, "vars");
            for (name, value) in self.object(&key, v)? {
                vars.insert(name.clone(), self.string(&join(&key, name), value)?);
            }
        }
        let key = join(path, "expect");
        let expectations = match map.get("expect") {
            Some(v) => self
                .array(&key, v)?
                .iter()
                .enumerate()
                .map(|(i, e)| self.expectation(&format!("{key}[{i}]"), e))
                .collect::<Res<Vec<_>>>()?,
            None => Vec::new(),
        };
        if expectations.is_empty() {
            return Err(self.invalid(&key, "a case needs at least one expectation"));
        }
        Ok(Case {
            name,
            messages,
            vars,
            expectations,
        })
    }

    fn messages(&self, key: &str, value: &Value) -> Res<Vec<Message>> {
        let items = self.array(key, value)?;
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let path = format!("{key}[{i}]");
            let map = self.object(&path, item)?;
            self.only_known(&path, map, &["role", "content"])?;
            let role = match map
                .get("role")
                .map(|r| self.string(&join(&path, "role"), r))
                .transpose()?
                .as_deref()
            {
                Some("user") => Role::User,
                Some("assistant") => Role::Assistant,
                Some("system") => Role::System,
                Some(other) => {
                    return Err(self.invalid(
                        &join(&path, "role"),
                        format!("`{other}` is not a role: user, assistant or system"),
                    ));
                }
                None => return Err(self.invalid(&path, "a message needs a role")),
            };
            let content = match map.get("content") {
                Some(c) => self.string(&join(&path, "content"), c)?,
                None => return Err(self.invalid(&path, "a message needs content")),
            };
            out.push(Message::new(role, vec![ContentPart::text(content)]));
        }
        if out.last().is_none_or(|m| m.role != Role::User) {
            return Err(self.invalid(key, "the last message must be the user's"));
        }
        Ok(out)
    }

    fn expectation(&self, path: &str, value: &Value) -> Res<Expectation> {
        let map = self.object(path, value)?;
        let kinds: Vec<&str> = map
            .keys()
            .map(String::as_str)
            .filter(|k| Expectation::KINDS.contains(k))
            .collect();
        let kind = match kinds.as_slice() {
            [one] => *one,
            [] => {
                return Err(self.invalid(
                    path,
                    format!("an expectation is one of: {}", Expectation::KINDS.join(", ")),
                ));
            }
            [a, b, ..] => {
                return Err(self.invalid(path, format!("one expectation per item, got {a} and {b}")));
            }
        };
        let allowed: &[&str] = if kind == "tool_called" {
            &["tool_called", "with"]
        } else {
            &[kind]
        };
        self.only_known(path, map, allowed)?;
        let key = join(path, kind);
        let value = &map[kind];
        Ok(match kind {
            "exact" => Expectation::Exact(self.string(&key, value)?),
            "contains" => Expectation::Contains(self.string(&key, value)?),
            "regex" => {
                let pattern = self.string(&key, value)?;
                Expectation::regex(&pattern)
                    .map_err(|e| self.invalid(&key, format!("not a regular expression: {e}")))?
            }
            "schema" => {
                OutputSpec::from_schema("expected", value.clone())
                    .map_err(|e| self.invalid(&key, format!("not a JSON Schema: {e}")))?;
                Expectation::Schema(value.clone())
            }
            "tool_called" => {
                let tool = self.string(&key, value)?;
                let with = map
                    .get("with")
                    .map(|w| self.object(&join(path, "with"), w).cloned())
                    .transpose()?;
                Expectation::ToolCalled(ToolExpectation {
                    tool,
                    with: with.map(Value::Object),
                })
            }
            "tool_not_called" => Expectation::ToolNotCalled(self.string(&key, value)?),
            "max_steps" => match value.as_u64().and_then(|n| u32::try_from(n).ok()) {
                Some(n) if n > 0 => Expectation::MaxSteps(n),
                _ => return Err(self.invalid(&key, "expected a whole number of steps, at least 1")),
            },
            _ => Expectation::Rubric(self.string(&key, value)?),
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::*;

    fn parse(text: &str) -> Result<Dataset, String> {
        Dataset::parse(text, Path::new("d.yaml")).map_err(|e| e.to_string())
    }

    #[test]
    fn every_kind_of_expectation_and_messages_parse() {
        let d = parse(
            r#"
cases:
  - name: all
    messages:
      - {role: system, content: Be brief.}
      - {role: user, content: "Hi ${WHO}"}
    vars: {WHO: you}
    expect:
      - exact: "Hello"
      - contains: ell
      - regex: "^H"
      - schema: {type: object}
      - tool_called: echo
        with: {text: hi}
      - tool_not_called: crash
      - max_steps: 3
      - rubric: Polite.
"#,
        )
        .unwrap();
        let case = &d.cases[0];
        assert_eq!(case.expectations.len(), 8);
        assert_eq!(case.messages()[1].text(), "Hi you");
        assert!(case.needs_judge());
    }

    #[test]
    fn json_is_a_dataset_too() {
        let d = parse(r#"{"cases": [{"prompt": "hi", "expect": [{"contains": "h"}]}]}"#).unwrap();
        assert_eq!(d.cases[0].name, "case 1");
    }

    #[test]
    fn mistakes_name_the_key_and_its_line() {
        let err = |t: &str| parse(t).unwrap_err();
        assert_eq!(
            err("cases:\n  - prompt: hi\n    expect:\n      - contain: x\n"),
            "d.yaml:4: cases[0].expect[0]: an expectation is one of: exact, contains, regex, schema, tool_called, tool_not_called, max_steps, rubric"
        );
        assert_eq!(
            err("cases:\n  - prompt: hi\n    expect:\n      - max_steps: 0\n"),
            "d.yaml:4: cases[0].expect[0].max_steps: expected a whole number of steps, at least 1"
        );
        assert_eq!(
            err("cases:\n  - prompt: hi\n    expect: [{contains: a}]\n    promt: x\n"),
            "d.yaml:4: cases[0].promt: unknown key (known: name, prompt, messages, vars, expect)"
        );
        assert_eq!(
            err(
                "cases:\n  - {name: a, prompt: x, expect: [{contains: a}]}\n  - {name: a, prompt: y, expect: [{contains: a}]}\n"
            ),
            "d.yaml:3: cases[1].name: `a` is also the name of cases[0]"
        );
        assert!(
            err("cases: [\n").starts_with("d.yaml:"),
            "a syntax error says where"
        );
        assert_eq!(
            err("cases:\n  - prompt: hi\n    expect:\n      - schema: {type: 7}\n")
                .split(": not a JSON Schema")
                .next()
                .unwrap(),
            "d.yaml:4: cases[0].expect[0].schema"
        );
    }
}
