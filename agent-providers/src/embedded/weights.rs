//! A GGUF file opened: its weights on the CPU (the architectures candle
//! runs quantized), its tokenizer and chat template from its metadata, the
//! tokens that end a turn and its context length.
//!
//! Invariant: everything comes from the one file; what it lacks is an
//! error naming the file and the key.

use std::fs::File;
use std::io::Cursor;
use std::path::Path;

use candle_core::quantized::gguf_file::{self, Content, Value};
use candle_core::quantized::tokenizer::TokenizerFromGguf;
use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{Device, Tensor};
use candle_transformers::models::{quantized_llama, quantized_qwen3};
use tokenizers::Tokenizer;

use super::LocalModelError;

/// The weights of one of the architectures served.
pub(crate) enum Weights {
    /// Llama and the models that share its layout (SmolLM2).
    Llama(Box<quantized_llama::ModelWeights>),
    /// Qwen3.
    Qwen3(Box<quantized_qwen3::ModelWeights>),
}

impl Weights {
    /// The next token's logits after `tokens` placed at `position`.
    pub(crate) fn forward(&mut self, tokens: &Tensor, position: usize) -> candle_core::Result<Tensor> {
        match self {
            Self::Llama(m) => m.forward(tokens, position),
            Self::Qwen3(m) => m.forward(tokens, position),
        }
    }

    /// Forget the previous conversation's attention state.
    pub(crate) fn clear(&mut self) {
        match self {
            Self::Llama(m) => m.clear_kv_cache(),
            Self::Qwen3(m) => m.clear_kv_cache(),
        }
    }
}

/// A model file, loaded.
pub(crate) struct Loaded {
    pub(crate) weights: Weights,
    pub(crate) tokenizer: Tokenizer,
    pub(crate) template: String,
    /// Tokens that end the model's turn.
    pub(crate) stops: Vec<u32>,
    /// How many tokens the model attends to.
    pub(crate) context: usize,
    /// `general.architecture`.
    pub(crate) architecture: String,
}

/// A template for files that carry none: ChatML, as SmolLM2 and Qwen use.
const CHATML: &str = "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

/// Open `path`.
pub(crate) fn load(path: &Path) -> Result<Loaded, LocalModelError> {
    let bad = |message: String| LocalModelError::Invalid {
        path: path.to_path_buf(),
        message,
    };
    let mut file = File::open(path).map_err(|source| LocalModelError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let content = Content::read(&mut file).map_err(|e| bad(format!("not a GGUF file: {e}")))?;
    let text = |key: &str| {
        content
            .metadata
            .get(key)
            .and_then(|v| v.to_string().ok())
            .cloned()
    };
    let architecture = text("general.architecture").ok_or_else(|| bad("no general.architecture".into()))?;
    let context = content
        .metadata
        .get(&format!("{architecture}.context_length"))
        .and_then(number)
        .unwrap_or(2048) as usize;
    let template = text("tokenizer.chat_template").unwrap_or_else(|| CHATML.to_owned());
    let mut tokenizer = Tokenizer::from_gguf(&content).map_err(|e| bad(format!("its tokenizer: {e}")))?;
    if text("tokenizer.ggml.pre").as_deref() == Some("smollm") {
        // candle's fallback for an unknown pre-tokenizer adds a prefix
        // space; SmolLM2's splits digits and adds none.
        use tokenizers::pre_tokenizers::{byte_level::ByteLevel, digits::Digits, sequence::Sequence};
        let pre = Sequence::new(vec![
            Digits::new(true).into(),
            ByteLevel::new(false, true, true).into(),
        ]);
        tokenizer.with_pre_tokenizer(Some(pre));
    }
    let stops = stop_tokens(&content, &tokenizer);
    let weights = match requantized(&content, &mut file).map_err(|e| bad(format!("its weights: {e}")))? {
        Some((content, mut bytes)) => open_weights(&architecture, content, &mut bytes),
        None => open_weights(&architecture, content, &mut file),
    }
    .map_err(bad)?;
    Ok(Loaded {
        weights,
        tokenizer,
        template,
        stops,
        context,
        architecture,
    })
}

/// The weights of `architecture` read from `reader`.
fn open_weights<R: std::io::Read + std::io::Seek>(
    architecture: &str,
    content: Content,
    reader: &mut R,
) -> Result<Weights, String> {
    match architecture {
        "llama" => quantized_llama::ModelWeights::from_gguf(content, reader, &Device::Cpu)
            .map(|m| Weights::Llama(Box::new(m))),
        "qwen3" => quantized_qwen3::ModelWeights::from_gguf(content, reader, &Device::Cpu)
            .map(|m| Weights::Qwen3(Box::new(m))),
        other => {
            return Err(format!(
                "architecture {other:?} is not served (llama, as SmolLM2; qwen3)"
            ));
        }
    }
    .map_err(|e| format!("its weights: {e}"))
}

/// Quantizations candle multiplies without SIMD on x86 (no AVX2 kernel), so
/// 4 to 10 times slower than the others.
const SCALAR_ONLY: [GgmlDType; 3] = [GgmlDType::Q4_1, GgmlDType::Q5_0, GgmlDType::Q5_1];

/// When the file holds tensors of a [`SCALAR_ONLY`] type: the same file in
/// memory with those tensors requantized to Q8_0, whose kernels use AVX2 and
/// AVX-512 where the CPU has them. Q8_0's grid is finer than any of theirs,
/// so each weight moves by at most half a Q8_0 step; the memory is 1.4 to
/// 1.7 times theirs. `None` when there is nothing to convert.
fn requantized(
    content: &Content,
    file: &mut File,
) -> candle_core::Result<Option<(Content, Cursor<Vec<u8>>)>> {
    if !content
        .tensor_infos
        .values()
        .any(|t| SCALAR_ONLY.contains(&t.ggml_dtype))
    {
        return Ok(None);
    }
    let mut tensors = Vec::with_capacity(content.tensor_infos.len());
    for (name, info) in &content.tensor_infos {
        let tensor = content.tensor(file, name, &Device::Cpu)?;
        let tensor = if SCALAR_ONLY.contains(&info.ggml_dtype) {
            QTensor::quantize(&tensor.dequantize(&Device::Cpu)?, GgmlDType::Q8_0)?
        } else {
            tensor
        };
        tensors.push((name.as_str(), tensor));
    }
    let metadata: Vec<(&str, &Value)> = content.metadata.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let tensors: Vec<(&str, &QTensor)> = tensors.iter().map(|(n, t)| (*n, t)).collect();
    let mut bytes = Cursor::new(Vec::new());
    gguf_file::write(&mut bytes, &metadata, &tensors)?;
    bytes.set_position(0);
    let content = Content::read(&mut bytes)?;
    Ok(Some((content, bytes)))
}

fn number(value: &Value) -> Option<u64> {
    value
        .to_u32()
        .map(u64::from)
        .or_else(|_| value.to_u64())
        .or_else(|_| value.to_i32().map(|n| n.max(0) as u64))
        .ok()
}

/// The end-of-sequence token and the chat formats' end-of-turn tokens the
/// vocabulary has.
fn stop_tokens(content: &Content, tokenizer: &Tokenizer) -> Vec<u32> {
    let mut stops: Vec<u32> = content
        .metadata
        .get("tokenizer.ggml.eos_token_id")
        .and_then(number)
        .map(|id| id as u32)
        .into_iter()
        .collect();
    for end in ["<|im_end|>", "<|endoftext|>", "<end_of_turn>", "<|eot_id|>"] {
        if let Some(id) = tokenizer.token_to_id(end)
            && !stops.contains(&id)
        {
            stops.push(id);
        }
    }
    stops
}
