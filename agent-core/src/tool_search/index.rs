//! Ranking a catalog's tools against a search query.
//!
//! Each tool is indexed by the words of its exposed name, of its
//! parameters' names and of its description (split at punctuation, `_`,
//! `-` and camelCase humps, lower-cased). A query word scores where it
//! matches a word (or the start of one, for words of three letters and
//! more), weighted by field (name over parameters over description) and by
//! how rare the word is in the catalog; a query that is a tool's name puts
//! that tool first. Ties keep the catalog's (alphabetical) order.

use std::collections::HashSet;

use crate::tool::ToolDefinition;

/// Weight of a query word found in a tool's name.
const NAME_WEIGHT: f64 = 3.0;
/// Weight of a query word found in a parameter's name.
const PARAMETER_WEIGHT: f64 = 1.5;
/// Weight of a query word found in the description.
const DESCRIPTION_WEIGHT: f64 = 1.0;
/// A word matched by its start only counts this much of a whole match.
const PREFIX_SHARE: f64 = 0.5;
/// Shortest query word matched by the start of a longer word.
const MIN_PREFIX_LEN: usize = 3;
/// Score added when the query is the tool's name.
const EXACT_NAME_BONUS: f64 = 100.0;

/// The words of one tool.
struct Entry {
    name: String,
    name_words: HashSet<String>,
    parameter_words: HashSet<String>,
    description_words: HashSet<String>,
}

/// An index over tool definitions.
pub(crate) struct Index {
    entries: Vec<Entry>,
}

/// The words of `text`: split at anything not a letter or digit and at
/// lower-to-upper case changes, lower-cased.
pub(crate) fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut previous_lower = false;
    for c in text.chars() {
        if !c.is_alphanumeric() {
            if !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
            previous_lower = false;
            continue;
        }
        if c.is_uppercase() && previous_lower && !current.is_empty() {
            out.push(std::mem::take(&mut current));
        }
        previous_lower = c.is_lowercase() || c.is_ascii_digit();
        current.extend(c.to_lowercase());
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// The names of a schema's top-level properties.
pub(crate) fn parameter_names(def: &ToolDefinition) -> Vec<&str> {
    def.input_schema
        .get("properties")
        .and_then(|p| p.as_object())
        .map(|p| p.keys().map(String::as_str).collect())
        .unwrap_or_default()
}

impl Index {
    /// An index of `definitions` (under their exposed names).
    pub fn new<'a>(definitions: impl IntoIterator<Item = &'a ToolDefinition>) -> Self {
        let entries = definitions
            .into_iter()
            .map(|def| Entry {
                name: def.name.clone(),
                name_words: words(&def.name).into_iter().collect(),
                parameter_words: parameter_names(def).into_iter().flat_map(words).collect(),
                description_words: words(&def.description).into_iter().collect(),
            })
            .collect();
        Self { entries }
    }

    /// The names of the best `limit` matches for `query`, best first.
    pub fn search(&self, query: &str, limit: usize) -> Vec<&str> {
        let mut terms = words(query);
        terms.sort_unstable();
        terms.dedup();
        let wanted = query.trim();
        let total = self.entries.len() as f64;
        let rarity: Vec<f64> = terms
            .iter()
            .map(|t| {
                let found = self.entries.iter().filter(|e| e.mentions(t)).count() as f64;
                (1.0 + total / (1.0 + found)).ln()
            })
            .collect();
        let mut scored: Vec<(f64, usize)> = self
            .entries
            .iter()
            .enumerate()
            .filter_map(|(i, entry)| {
                let mut score: f64 = terms
                    .iter()
                    .zip(&rarity)
                    .map(|(term, rare)| entry.score(term) * rare)
                    .sum();
                if entry.name.eq_ignore_ascii_case(wanted) {
                    score += EXACT_NAME_BONUS;
                }
                (score > 0.0).then_some((score, i))
            })
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        scored
            .into_iter()
            .take(limit)
            .map(|(_, i)| self.entries[i].name.as_str())
            .collect()
    }
}

impl Entry {
    fn mentions(&self, term: &str) -> bool {
        [&self.name_words, &self.parameter_words, &self.description_words]
            .into_iter()
            .any(|words| field_match(words, term) > 0.0)
    }

    fn score(&self, term: &str) -> f64 {
        NAME_WEIGHT * field_match(&self.name_words, term)
            + PARAMETER_WEIGHT * field_match(&self.parameter_words, term)
            + DESCRIPTION_WEIGHT * field_match(&self.description_words, term)
    }
}

/// 1 for a word equal to `term`, [`PREFIX_SHARE`] for one starting with
/// it (or it with the word: `files` finds `file`), 0 otherwise.
fn field_match(words: &HashSet<String>, term: &str) -> f64 {
    if words.contains(term) {
        return 1.0;
    }
    if term.len() < MIN_PREFIX_LEN {
        return 0.0;
    }
    let partial = words
        .iter()
        .any(|w| w.len() >= MIN_PREFIX_LEN && (w.starts_with(term) || term.starts_with(w.as_str())));
    if partial { PREFIX_SHARE } else { 0.0 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn def(name: &str, description: &str, params: &[&str]) -> ToolDefinition {
        let properties: serde_json::Map<String, serde_json::Value> = params
            .iter()
            .map(|p| ((*p).to_owned(), json!({"type": "string"})))
            .collect();
        ToolDefinition::new(
            name,
            description,
            json!({"type": "object", "properties": properties}),
        )
    }

    #[test]
    fn words_split_at_humps_and_punctuation() {
        assert_eq!(words("getWeatherForecast"), ["get", "weather", "forecast"]);
        assert_eq!(words("fs__read_file"), ["fs", "read", "file"]);
        assert_eq!(words("HTTPServer v2"), ["httpserver", "v2"]);
    }

    #[test]
    fn names_outrank_descriptions_and_rare_words_outrank_common_ones() {
        let defs = [
            def(
                "gh__create_issue",
                "Create an issue in a repository.",
                &["title", "body"],
            ),
            def("gh__list_issues", "List the issues of a repository.", &["state"]),
            def("fs__read_file", "Read a file from disk.", &["path"]),
            def(
                "fs__write_file",
                "Write a file; mentions issue once.",
                &["path", "content"],
            ),
            def("weather__forecast", "Forecast for a city.", &["city"]),
        ];
        let index = Index::new(&defs);
        assert_eq!(
            index.search("create issue", 2),
            ["gh__create_issue", "gh__list_issues"]
        );
        assert_eq!(index.search("files", 2), ["fs__read_file", "fs__write_file"]);
        assert_eq!(index.search("city", 5), ["weather__forecast"]);
        assert_eq!(index.search("fs__write_file", 1), ["fs__write_file"]);
        assert!(index.search("spaceship", 5).is_empty());
    }
}
