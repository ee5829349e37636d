//! Ranking a catalog's tools against a search query.
//!
//! Each tool is indexed by the words of its exposed name, of its
//! parameters' names and of its description (split at punctuation, `_`,
//! `-` and camelCase humps, lower-cased). A query word scores where it
//! matches a word (or the start of one, for words of three letters and
//! more), weighted by field (name over parameters over description) and by
//! how rare the word is in the catalog; a query that is a tool's name puts
//! that tool first. Ties keep the catalog's (alphabetical) order.

use std::collections::{BTreeMap, HashMap};

use loopwright_types::tool::ToolDefinition;

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
/// Distinct query words scored at most (the first ones of the query).
pub(crate) const MAX_QUERY_WORDS: usize = 32;

/// Where in a tool a word is.
const FIELDS: usize = 3;
const WEIGHTS: [f64; FIELDS] = [NAME_WEIGHT, PARAMETER_WEIGHT, DESCRIPTION_WEIGHT];

/// An index over tool definitions: each word, sorted, with the tools and
/// fields it is in, so a query word costs a lookup and a range of the
/// words it starts, not a pass over every tool.
pub(crate) struct Index {
    names: Vec<String>,
    /// Word -> (tool, field) pairs, each pair once.
    words: BTreeMap<String, Vec<(usize, usize)>>,
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
        let mut names = Vec::new();
        let mut words: BTreeMap<String, Vec<(usize, usize)>> = BTreeMap::new();
        for (tool, def) in definitions.into_iter().enumerate() {
            names.push(def.name.clone());
            let fields = [
                self::words(&def.name),
                parameter_names(def).into_iter().flat_map(self::words).collect(),
                self::words(&def.description),
            ];
            for (field, found) in fields.into_iter().enumerate() {
                for word in found {
                    let at = words.entry(word).or_default();
                    if at.last() != Some(&(tool, field)) {
                        at.push((tool, field));
                    }
                }
            }
        }
        Self { names, words }
    }

    /// The names of the best `limit` matches for `query` (its first
    /// [`MAX_QUERY_WORDS`] distinct words), best first.
    pub fn search(&self, query: &str, limit: usize) -> Vec<&str> {
        let mut terms: Vec<String> = Vec::new();
        for word in words(query) {
            if terms.len() == MAX_QUERY_WORDS {
                break;
            }
            if !terms.contains(&word) {
                terms.push(word);
            }
        }
        let wanted = query.trim();
        let total = self.names.len() as f64;
        let mut scores: HashMap<usize, f64> = HashMap::new();
        for term in &terms {
            // Sorted, so each score adds up in the same order every time.
            let mut matches: Vec<((usize, usize), f64)> = self.matches(term).into_iter().collect();
            matches.sort_unstable_by_key(|(at, _)| *at);
            let mut tools: Vec<usize> = matches.iter().map(|((tool, _), _)| *tool).collect();
            tools.dedup();
            let rare = (1.0 + total / (1.0 + tools.len() as f64)).ln();
            for ((tool, field), share) in matches {
                *scores.entry(tool).or_default() += WEIGHTS[field] * share * rare;
            }
        }
        for (tool, name) in self.names.iter().enumerate() {
            if name.eq_ignore_ascii_case(wanted) {
                *scores.entry(tool).or_default() += EXACT_NAME_BONUS;
            }
        }
        let mut scored: Vec<(f64, usize)> = scores
            .into_iter()
            .filter(|(_, score)| *score > 0.0)
            .map(|(tool, score)| (score, tool))
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        scored
            .into_iter()
            .take(limit)
            .map(|(_, i)| self.names[i].as_str())
            .collect()
    }

    /// How well `term` matches each (tool, field) it matches: 1 for a word
    /// equal to it, [`PREFIX_SHARE`] for one starting with it or that it
    /// starts with (`files` finds `file`), for terms of
    /// [`MIN_PREFIX_LEN`] letters or more.
    fn matches(&self, term: &str) -> HashMap<(usize, usize), f64> {
        let mut out: HashMap<(usize, usize), f64> = HashMap::new();
        let mut note = |at: &[(usize, usize)], share: f64| {
            for &key in at {
                let best = out.entry(key).or_default();
                *best = best.max(share);
            }
        };
        if let Some(at) = self.words.get(term) {
            note(at, 1.0);
        }
        if term.chars().count() < MIN_PREFIX_LEN {
            return out;
        }
        let longer = self
            .words
            .range::<str, _>((std::ops::Bound::Excluded(term), std::ops::Bound::Unbounded))
            .take_while(|(word, _)| word.starts_with(term));
        for (_, at) in longer {
            note(at, PREFIX_SHARE);
        }
        for (end, _) in term.char_indices().skip(MIN_PREFIX_LEN) {
            if let Some(at) = self.words.get(&term[..end]) {
                note(at, PREFIX_SHARE);
            }
        }
        out
    }
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

    #[test]
    fn only_the_first_words_of_a_query_are_scored() {
        let defs = [def("fs__read_file", "Read a file from disk.", &["path"])];
        let index = Index::new(&defs);
        let mut query: Vec<String> = (0..MAX_QUERY_WORDS).map(|i| format!("filler{i}")).collect();
        query.push("read".into());
        assert!(index.search(&query.join(" "), 5).is_empty());
        query.remove(0);
        assert_eq!(index.search(&query.join(" "), 5), ["fs__read_file"]);
    }
}
