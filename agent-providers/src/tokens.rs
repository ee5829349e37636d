//! Token counters for budgets: tiktoken encodings for OpenAI models, the
//! four-characters estimate for everything else.

use std::sync::{Arc, OnceLock};

use loopwright_types::budget::{CharEstimate, TokenCounter};
use tiktoken_rs::CoreBPE;

use crate::ConfigError;

/// Prefix of a configured tokenizer naming a tiktoken encoding
/// (`tiktoken:o200k_base`), so other tokenizer kinds can be added later.
pub const TIKTOKEN_PREFIX: &str = "tiktoken:";

/// Model id prefixes that use `o200k_base`; checked before the
/// `cl100k_base` list because `gpt-4o` also starts with `gpt-4`.
pub const O200K_MODEL_PREFIXES: &[&str] = &[
    "gpt-4o",
    "gpt-4.1",
    "gpt-4.5",
    "gpt-5",
    "o1",
    "o3",
    "o4",
    "chatgpt-4o",
    "gpt-oss",
];

/// Model id prefixes that use `cl100k_base` (the older OpenAI models).
pub const CL100K_MODEL_PREFIXES: &[&str] = &[
    "gpt-4",
    "gpt-3.5-turbo",
    "gpt-35-turbo",
    "text-embedding-3",
    "text-embedding-ada-002",
];

/// A tiktoken encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TiktokenEncoding {
    /// `o200k_base`: GPT-4o, GPT-4.1, GPT-5 and the o-series.
    O200kBase,
    /// `cl100k_base`: GPT-4, GPT-3.5 Turbo and the v3 embeddings.
    Cl100kBase,
    /// `p50k_base`: Codex and text-davinci-002/003.
    P50kBase,
    /// `r50k_base`: GPT-3 (davinci and friends).
    R50kBase,
}

impl TiktokenEncoding {
    /// Every encoding, in the order of [`TiktokenEncoding::name`] lookups.
    pub const ALL: [Self; 4] = [Self::O200kBase, Self::Cl100kBase, Self::P50kBase, Self::R50kBase];

    /// The encoding's tiktoken name (`o200k_base`).
    pub fn name(self) -> &'static str {
        match self {
            Self::O200kBase => "o200k_base",
            Self::Cl100kBase => "cl100k_base",
            Self::P50kBase => "p50k_base",
            Self::R50kBase => "r50k_base",
        }
    }

    /// The encoding a tiktoken name denotes.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.name() == name)
    }

    /// The encoding an OpenAI model id uses, when known.
    ///
    /// ```
    /// use loopwright_providers::TiktokenEncoding;
    /// assert_eq!(TiktokenEncoding::for_model("gpt-4o-mini"), Some(TiktokenEncoding::O200kBase));
    /// assert_eq!(TiktokenEncoding::for_model("gpt-4-turbo"), Some(TiktokenEncoding::Cl100kBase));
    /// assert_eq!(TiktokenEncoding::for_model("claude-sonnet-4-5"), None);
    /// ```
    pub fn for_model(model_id: &str) -> Option<Self> {
        // Routed ids (OpenRouter's `openai/gpt-4o`) name the model last.
        let id = model_id
            .rsplit('/')
            .next()
            .unwrap_or(model_id)
            .to_ascii_lowercase();
        if O200K_MODEL_PREFIXES.iter().any(|p| id.starts_with(p)) {
            Some(Self::O200kBase)
        } else if CL100K_MODEL_PREFIXES.iter().any(|p| id.starts_with(p)) {
            Some(Self::Cl100kBase)
        } else {
            None
        }
    }

    /// The encoder, built on first use and shared afterwards.
    fn encoder(self) -> Result<&'static CoreBPE, String> {
        static O200K: OnceLock<Result<CoreBPE, String>> = OnceLock::new();
        static CL100K: OnceLock<Result<CoreBPE, String>> = OnceLock::new();
        static P50K: OnceLock<Result<CoreBPE, String>> = OnceLock::new();
        static R50K: OnceLock<Result<CoreBPE, String>> = OnceLock::new();
        let cell = match self {
            Self::O200kBase => &O200K,
            Self::Cl100kBase => &CL100K,
            Self::P50kBase => &P50K,
            Self::R50kBase => &R50K,
        };
        let build = || {
            let built = match self {
                Self::O200kBase => tiktoken_rs::o200k_base(),
                Self::Cl100kBase => tiktoken_rs::cl100k_base(),
                Self::P50kBase => tiktoken_rs::p50k_base(),
                Self::R50kBase => tiktoken_rs::r50k_base(),
            };
            built.map_err(|e| e.to_string())
        };
        cell.get_or_init(build).as_ref().map_err(Clone::clone)
    }
}

/// Counts tokens exactly with a tiktoken encoding (special-token text is
/// counted as ordinary text, as a prompt would be).
///
/// ```
/// use loopwright_types::budget::TokenCounter;
/// use loopwright_providers::{TiktokenCounter, TiktokenEncoding};
/// let counter = TiktokenCounter::new(TiktokenEncoding::O200kBase).unwrap();
/// assert_eq!(counter.count("hello world"), 2);
/// ```
#[derive(Clone)]
pub struct TiktokenCounter {
    encoding: TiktokenEncoding,
    bpe: &'static CoreBPE,
}

impl std::fmt::Debug for TiktokenCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TiktokenCounter")
            .field("encoding", &self.encoding.name())
            .finish()
    }
}

impl TiktokenCounter {
    /// A counter for `encoding`; the first call per encoding builds it.
    pub fn new(encoding: TiktokenEncoding) -> Result<Self, ConfigError> {
        let bpe = encoding.encoder().map_err(|message| ConfigError::Tokenizer {
            tokenizer: format!("{TIKTOKEN_PREFIX}{}", encoding.name()),
            message,
        })?;
        Ok(Self { encoding, bpe })
    }

    /// The encoding counted with.
    pub fn encoding(&self) -> TiktokenEncoding {
        self.encoding
    }
}

impl TokenCounter for TiktokenCounter {
    fn count(&self, text: &str) -> u64 {
        self.bpe.encode_ordinary(text).len() as u64
    }
}

/// The counter for a model: the configured tokenizer (`tiktoken:<encoding>`)
/// when given, else the model's known tiktoken encoding, else
/// [`CharEstimate`].
///
/// ```
/// use loopwright_providers::token_counter_for;
/// assert!(format!("{:?}", token_counter_for("gpt-4.1", None).unwrap()).contains("o200k_base"));
/// assert!(format!("{:?}", token_counter_for("gemini-2.5-pro", None).unwrap()).contains("CharEstimate"));
/// assert!(token_counter_for("x", Some("tiktoken:bogus")).is_err());
/// ```
pub fn token_counter_for(
    model_id: &str,
    tokenizer: Option<&str>,
) -> Result<Arc<dyn TokenCounter>, ConfigError> {
    let encoding = match tokenizer.map(str::trim) {
        Some(name) => {
            let unknown = || ConfigError::UnknownTokenizer(name.to_owned());
            let encoding = name.strip_prefix(TIKTOKEN_PREFIX).ok_or_else(unknown)?;
            Some(TiktokenEncoding::from_name(encoding).ok_or_else(unknown)?)
        }
        None => TiktokenEncoding::for_model(model_id),
    };
    Ok(match encoding {
        Some(encoding) => Arc::new(TiktokenCounter::new(encoding)?),
        None => Arc::new(CharEstimate),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn encoders_are_built_once_and_shared() {
        let a = TiktokenCounter::new(TiktokenEncoding::O200kBase).unwrap();
        let b = TiktokenCounter::new(TiktokenEncoding::O200kBase).unwrap();
        assert!(std::ptr::eq(a.bpe, b.bpe));
        let c = TiktokenCounter::new(TiktokenEncoding::Cl100kBase).unwrap();
        assert!(!std::ptr::eq(a.bpe, c.bpe));
    }

    #[test]
    fn names_round_trip() {
        for encoding in TiktokenEncoding::ALL {
            assert_eq!(TiktokenEncoding::from_name(encoding.name()), Some(encoding));
        }
        assert_eq!(TiktokenEncoding::from_name("o200k_harmony"), None);
    }
}
