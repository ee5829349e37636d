//! One generation, on a blocking thread: the prompt's tokens through the
//! model, then one token at a time, each decoded piece split into the
//! loop's events and sent as it comes.
//!
//! Invariants: the model's state is cleared before each prompt (one
//! conversation at a time per loaded model); generation stops at a stop
//! token, at the output limit, at the context length, or as soon as the
//! request is cancelled or its stream dropped; the usage counts the
//! prompt's and the answer's tokens as the model's tokenizer counts them.

use candle_core::{Device, Tensor};
use candle_transformers::generation::{LogitsProcessor, Sampling};
use loopwright_types::{FinishReason, ModelEvent};
use loopwright_types::{ModelError, Usage};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::split::Splitter;
use super::weights::Loaded;

/// What one generation is asked for.
pub(crate) struct Asked {
    pub(crate) prompt: String,
    pub(crate) max_tokens: usize,
    pub(crate) temperature: f64,
    pub(crate) seed: u64,
    pub(crate) cancel: CancellationToken,
}

type Sent = mpsc::Sender<Result<ModelEvent, ModelError>>;

/// Generate for `asked`, sending events to `tx`.
pub(crate) fn generate(model: &mut Loaded, asked: Asked, tx: &Sent) {
    if let Err(e) = run(model, asked, tx) {
        let _ = tx.blocking_send(Err(e));
    }
}

fn failed(what: &str, e: impl std::fmt::Display) -> ModelError {
    ModelError::server(None, format!("the local model: {what}: {e}"))
}

fn run(model: &mut Loaded, asked: Asked, tx: &Sent) -> Result<(), ModelError> {
    let prompt = model
        .tokenizer
        .encode(asked.prompt.as_str(), false)
        .map_err(|e| failed("the prompt's tokens", e))?
        .get_ids()
        .to_vec();
    if prompt.len() >= model.context {
        return Err(ModelError::context_length_exceeded(format!(
            "the prompt is {} tokens; the local model ({}) attends to {}",
            prompt.len(),
            model.architecture,
            model.context
        )));
    }
    let sampling = if asked.temperature <= 0.0 {
        Sampling::ArgMax
    } else {
        Sampling::All {
            temperature: asked.temperature,
        }
    };
    let mut sampler = LogitsProcessor::from_sampling(asked.seed, sampling);
    let mut splitter = Splitter::new("call_local_");
    let mut decoder = model.tokenizer.decode_stream(false);
    model.weights.clear();
    let room = model.context - prompt.len();
    let limit = asked.max_tokens.min(room);
    let mut input = prompt.clone();
    let mut position = 0;
    let mut generated = 0usize;
    let mut reason = FinishReason::Length;
    while generated < limit {
        if asked.cancel.is_cancelled() || tx.is_closed() {
            return Ok(());
        }
        let tokens = Tensor::new(input.as_slice(), &Device::Cpu)
            .and_then(|t| t.unsqueeze(0))
            .map_err(|e| failed("its input", e))?;
        let logits = model
            .weights
            .forward(&tokens, position)
            .and_then(|l| l.squeeze(0))
            .and_then(|l| l.to_dtype(candle_core::DType::F32))
            .map_err(|e| failed("a step", e))?;
        position += input.len();
        let next = sampler.sample(&logits).map_err(|e| failed("sampling", e))?;
        generated += 1;
        if model.stops.contains(&next) {
            reason = FinishReason::Stop;
            break;
        }
        if let Some(piece) = decoder.step(next).map_err(|e| failed("decoding", e))? {
            for event in splitter.push(&piece) {
                if tx.blocking_send(Ok(event)).is_err() {
                    return Ok(());
                }
            }
        }
        input = vec![next];
    }
    for event in splitter.finish() {
        if tx.blocking_send(Ok(event)).is_err() {
            return Ok(());
        }
    }
    if splitter.calls() > 0 && reason == FinishReason::Stop {
        reason = FinishReason::ToolCalls;
    }
    let usage = Usage::new(prompt.len() as u64, generated as u64);
    let _ = tx.blocking_send(Ok(ModelEvent::Finish { reason, usage }));
    Ok(())
}
