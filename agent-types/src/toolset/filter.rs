//! Allow / deny lists with `*` wildcards.

/// Whether `text` matches `pattern`, where `*` matches any run of characters
/// (including none) and every other character matches itself.
///
/// ```
/// use loopwright_types::toolset::wildcard_match;
/// assert!(wildcard_match("read_*", "read_file"));
/// assert!(wildcard_match("*", "anything"));
/// assert!(wildcard_match("*_file", "read_file"));
/// assert!(!wildcard_match("read_*", "write_file"));
/// assert!(wildcard_match("exact", "exact"));
/// ```
pub fn wildcard_match(pattern: &str, text: &str) -> bool {
    let mut pieces = pattern.split('*');
    // `split` always yields at least one piece.
    let first = pieces.next().unwrap_or_default();
    let Some(mut rest) = text.strip_prefix(first) else {
        return false;
    };
    let pieces: Vec<&str> = pieces.collect();
    let Some((last, middle)) = pieces.split_last() else {
        // No `*` at all: the whole text must equal the pattern.
        return rest.is_empty();
    };
    for piece in middle {
        match rest.find(piece) {
            Some(at) => rest = &rest[at + piece.len()..],
            None => return false,
        }
    }
    rest.ends_with(last)
}

/// Allow and deny patterns. A name passes when it matches some allow pattern
/// (or the allow list is empty) and no deny pattern.
///
/// ```
/// use loopwright_types::NameFilter;
/// let f = NameFilter::default().allow("git_*").deny("git_push");
/// assert!(f.permits("git_status"));
/// assert!(!f.permits("git_push"));
/// assert!(!f.permits("rm"));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NameFilter {
    allow: Vec<String>,
    deny: Vec<String>,
}

impl NameFilter {
    /// Add an allow pattern.
    pub fn allow(mut self, pattern: impl Into<String>) -> Self {
        self.allow.push(pattern.into());
        self
    }

    /// Add a deny pattern.
    pub fn deny(mut self, pattern: impl Into<String>) -> Self {
        self.deny.push(pattern.into());
        self
    }

    /// Whether `name` passes.
    pub fn permits(&self, name: &str) -> bool {
        (self.allow.is_empty() || self.allow.iter().any(|p| wildcard_match(p, name)))
            && !self.deny.iter().any(|p| wildcard_match(p, name))
    }
}
