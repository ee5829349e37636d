//! Names the model sees.
//!
//! Invariant: every exposed name matches `^[a-zA-Z0-9_-]{1,64}$` (the
//! strictest rule among OpenAI, Anthropic and Gemini) and is unique within a
//! catalog; the catalog keeps each exposed name's source and original name, so
//! calls go to the tool under its original name. Resolution is deterministic:
//! the same sources and tools give the same names on every run, whatever the
//! order of sources within a priority.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// Longest tool name any supported provider accepts.
pub const MAX_TOOL_NAME_LEN: usize = 64;

/// Separator between a source's name and a tool's in namespaced names
/// (double underscore: valid everywhere and unlikely inside either name).
pub const NAMESPACE_SEPARATOR: &str = "__";

/// Hex digits of the hash suffix that makes a long or clashing name unique.
const HASH_SUFFIX_LEN: usize = 8;

/// A naming function of (source name, tool name).
pub type NameFn = Arc<dyn Fn(&str, &str) -> String + Send + Sync>;

/// How a source's tools are named for the model.
///
/// ```
/// use loopwright_types::Naming;
/// assert_eq!(Naming::Prefixed.apply("fs", "read"), "fs__read");
/// assert_eq!(Naming::Bare.apply("fs", "read"), "read");
/// let custom = Naming::custom(|source, tool| format!("{tool}_via_{source}"));
/// assert_eq!(custom.apply("fs", "read"), "read_via_fs");
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub enum Naming {
    /// The tool's own name; on a clash the higher priority keeps it and the
    /// other tool is left out (with a warning).
    Bare,
    /// `{source}__{tool}`.
    Prefixed,
    /// A function of (source, tool).
    Custom(NameFn),
}

impl Naming {
    /// A custom naming function.
    pub fn custom(f: impl Fn(&str, &str) -> String + Send + Sync + 'static) -> Self {
        Self::Custom(Arc::new(f))
    }

    /// The name this policy wants for a tool (before sanitising).
    pub fn apply(&self, source: &str, tool: &str) -> String {
        match self {
            Self::Bare => tool.to_owned(),
            Self::Prefixed => format!("{source}{NAMESPACE_SEPARATOR}{tool}"),
            Self::Custom(f) => f(source, tool),
        }
    }
}

impl std::fmt::Debug for Naming {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Bare => f.write_str("Bare"),
            Self::Prefixed => f.write_str("Prefixed"),
            Self::Custom(_) => f.write_str("Custom(..)"),
        }
    }
}

/// Whether a name is valid for every supported provider.
///
/// ```
/// assert!(loopwright_types::toolset::is_valid_tool_name("fs__read_file"));
/// assert!(!loopwright_types::toolset::is_valid_tool_name("read.file"));
/// assert!(!loopwright_types::toolset::is_valid_tool_name(""));
/// ```
pub fn is_valid_tool_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_TOOL_NAME_LEN
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Replace every character outside `[a-zA-Z0-9_-]` with `_` (an empty name
/// becomes `_`). Length is not changed here.
///
/// ```
/// assert_eq!(loopwright_types::toolset::sanitize_tool_name("files.read/v2"), "files_read_v2");
/// ```
pub fn sanitize_tool_name(name: &str) -> String {
    if name.is_empty() {
        return "_".to_owned();
    }
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// FNV-1a, 64 bit: stable across runs, platforms and Rust versions (unlike
/// the standard library's hasher).
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        hash ^= u64::from(*b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

fn hashed_name(base: &str, key: &str, attempt: u32) -> String {
    let mut seed = key.as_bytes().to_vec();
    seed.extend_from_slice(&attempt.to_le_bytes());
    let suffix = format!("{:016x}", fnv1a(&seed));
    let keep = MAX_TOOL_NAME_LEN - HASH_SUFFIX_LEN - 1;
    let mut head: String = base.chars().take(keep).collect();
    head.push('_');
    head.push_str(&suffix[..HASH_SUFFIX_LEN]);
    head
}

/// One tool waiting for a name.
#[derive(Debug, Clone)]
pub(crate) struct Candidate {
    pub source: String,
    pub priority: i32,
    pub original: String,
    pub desired: String,
    pub bare: bool,
}

/// What resolution decided for one candidate (same order as the input).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Resolution {
    Named(String),
    /// Left out: a bare name already taken by (source, original).
    Shadowed {
        by_source: String,
        by_original: String,
    },
}

/// Give every candidate a valid, unique name, or leave it out when its bare
/// name is taken by a tool of higher (or equal, earlier-sorted) priority.
pub(crate) fn resolve(candidates: &[Candidate]) -> Vec<Resolution> {
    let mut order: Vec<usize> = (0..candidates.len()).collect();
    order.sort_by(|&a, &b| {
        let (ca, cb) = (&candidates[a], &candidates[b]);
        cb.priority
            .cmp(&ca.priority)
            .then_with(|| ca.source.cmp(&cb.source))
            .then_with(|| ca.original.cmp(&cb.original))
            .then_with(|| ca.desired.cmp(&cb.desired))
            .then_with(|| cb.bare.cmp(&ca.bare))
            .then_with(|| a.cmp(&b))
    });
    let mut taken: HashMap<String, usize> = HashMap::new();
    let mut out = vec![Resolution::Named(String::new()); candidates.len()];
    // Names claimed in a first pass by candidates whose desired name is valid
    // as it is, so that a derived (hashed) name never steals one of them.
    let exact: HashSet<&str> = candidates
        .iter()
        .filter(|c| is_valid_tool_name(&c.desired))
        .map(|c| c.desired.as_str())
        .collect();
    for &i in &order {
        let c = &candidates[i];
        let clean = sanitize_tool_name(&c.desired);
        let fits = clean.len() <= MAX_TOOL_NAME_LEN;
        if fits && !taken.contains_key(&clean) {
            taken.insert(clean.clone(), i);
            out[i] = Resolution::Named(clean);
            continue;
        }
        if c.bare
            && fits
            && clean == c.desired
            && let Some(&winner) = taken.get(&clean)
        {
            out[i] = Resolution::Shadowed {
                by_source: candidates[winner].source.clone(),
                by_original: candidates[winner].original.clone(),
            };
            continue;
        }
        let key = format!("{}\u{0}{}", c.source, c.original);
        let mut attempt = 0;
        let name = loop {
            let candidate = hashed_name(&clean, &key, attempt);
            if !taken.contains_key(&candidate) && !exact.contains(candidate.as_str()) {
                break candidate;
            }
            attempt += 1;
        };
        taken.insert(name.clone(), i);
        out[i] = Resolution::Named(name);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn cand(source: &str, priority: i32, original: &str, bare: bool) -> Candidate {
        let naming = if bare { Naming::Bare } else { Naming::Prefixed };
        Candidate {
            source: source.into(),
            priority,
            original: original.into(),
            desired: naming.apply(source, original),
            bare,
        }
    }

    #[test]
    fn bare_clash_keeps_higher_priority() {
        let r = resolve(&[cand("mcp", 0, "Read", true), cand("coding", 100, "Read", true)]);
        assert_eq!(r[1], Resolution::Named("Read".into()));
        assert_eq!(
            r[0],
            Resolution::Shadowed {
                by_source: "coding".into(),
                by_original: "Read".into()
            }
        );
    }

    #[test]
    fn derived_clash_gets_hash_suffix() {
        let r = resolve(&[cand("a.b", 0, "x", false), cand("a_b", 0, "x", false)]);
        let names: Vec<_> = r
            .iter()
            .map(|r| match r {
                Resolution::Named(n) => n.clone(),
                Resolution::Shadowed { .. } => String::new(),
            })
            .collect();
        assert!(names.contains(&"a_b__x".to_string()));
        assert!(names.iter().all(|n| is_valid_tool_name(n)));
        assert_ne!(names[0], names[1]);
    }

    #[test]
    fn long_names_are_cut_with_hash() {
        let long = "t".repeat(100);
        let r = resolve(&[cand("server", 0, &long, false)]);
        let Resolution::Named(n) = &r[0] else {
            unreachable!()
        };
        assert_eq!(n.len(), MAX_TOOL_NAME_LEN);
        assert!(is_valid_tool_name(n));
    }

    fn arb_candidates() -> impl Strategy<Value = Vec<Candidate>> {
        let source = prop::sample::select(vec![
            "fs",
            "git",
            "a.b",
            "a_b",
            "ßrv",
            "x".repeat(70).leak() as &str,
        ]);
        let tool = "[a-zA-Z0-9_.\\- ]{0,80}";
        prop::collection::vec((source, 0..3i32, tool, any::<bool>()), 0..40).prop_map(|v| {
            v.into_iter()
                .map(|(s, p, t, bare)| cand(s, p, &t, bare))
                .collect()
        })
    }

    fn named(r: &[Resolution]) -> Vec<Option<String>> {
        r.iter()
            .map(|r| match r {
                Resolution::Named(n) => Some(n.clone()),
                Resolution::Shadowed { .. } => None,
            })
            .collect()
    }

    proptest! {
        #[test]
        fn names_valid_and_unique(cands in arb_candidates()) {
            let r = resolve(&cands);
            let names: Vec<String> = named(&r).into_iter().flatten().collect();
            for n in &names {
                prop_assert!(is_valid_tool_name(n), "invalid name {n:?}");
            }
            let unique: HashSet<&String> = names.iter().collect();
            prop_assert_eq!(unique.len(), names.len());
            // Only bare candidates are ever left out.
            for (c, res) in cands.iter().zip(&r) {
                if matches!(res, Resolution::Shadowed { .. }) {
                    prop_assert!(c.bare);
                }
            }
        }

        #[test]
        fn deterministic_and_order_independent(cands in arb_candidates(), seed in any::<u64>()) {
            let first = named(&resolve(&cands));
            prop_assert_eq!(&first, &named(&resolve(&cands)));
            // Shuffle (deterministically from the seed) and map back.
            let mut idx: Vec<usize> = (0..cands.len()).collect();
            let mut s = seed;
            for i in (1..idx.len()).rev() {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                idx.swap(i, (s >> 33) as usize % (i + 1));
            }
            let shuffled: Vec<Candidate> = idx.iter().map(|&i| cands[i].clone()).collect();
            let r2 = named(&resolve(&shuffled));
            // Identical (source, original) pairs are interchangeable; compare as multisets per key.
            let mut a: Vec<(String, String, Option<String>)> = cands.iter().zip(&first)
                .map(|(c, n)| (c.source.clone(), c.original.clone(), n.clone())).collect();
            let mut b: Vec<(String, String, Option<String>)> = shuffled.iter().zip(&r2)
                .map(|(c, n)| (c.source.clone(), c.original.clone(), n.clone())).collect();
            a.sort();
            b.sort();
            prop_assert_eq!(a, b);
        }
    }
}
